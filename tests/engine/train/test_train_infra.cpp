// The training infrastructure (engine/train): the learning-rate schedule against TAO's
// formula at its boundaries; the solver against torch.optim.SGD (sgd_reference.py, live from
// MRCNN_PYTHON) with weight decay, momentum, TAO's bias rule and clipping, L1 against a hand
// computation, accumulation against one big batch; the fp16 loss scaler on synthetic
// gradients; checkpoints (bit-identical round trip, RNG restored, Python's torch.load
// reading them, keep-K and best, a crash at each stage of a save, corrupt and foreign
// files). The events, the stop flag and the run directory: test_train_events.cpp.
#include <ATen/ATen.h>
#include <sys/wait.h>
#include <torch/nn/modules/linear.h>
#include <unistd.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "engine/model/state_dict.h"
#include "engine/train/checkpoint.h"
#include "engine/train/loss_scaler.h"
#include "engine/train/lr_schedule.h"
#include "engine/train/solver.h"
#include "specs/spec.h"
#include "tests/common/files.h"
#include "tests/common/reference_script.h"

namespace fs = std::filesystem;
namespace train = mrcnn::train;
namespace model = mrcnn::model;

namespace {

std::map<std::string, at::Tensor> asMap(const model::StateDict& s) {
  std::map<std::string, at::Tensor> m;
  for (const auto& [k, v] : s)
    m[k] = v;
  return m;
}

double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

using mrcnn::testing::readAll;

// TAO's schedule written independently of lr_schedule.cpp, in TF's terms: the warmup branch
// in float32 as TF computes it, tf.train.piecewise_constant by its documented rule (values[0]
// for x <= b[0], values[i] for b[i-1] < x <= b[i], values[n] for x > b[n-1]).
double taoLearningRate(uint64_t step, float warmup_lr, float init_lr, uint64_t warmup_steps,
                       const std::vector<uint64_t>& boundaries, const std::vector<double>& decay) {
  if (step < warmup_steps) {
    return warmup_lr +
           static_cast<float>(step) / static_cast<float>(warmup_steps) * (init_lr - warmup_lr);
  }
  std::vector<double> values = {init_lr};
  for (double d : decay)
    values.push_back(d * init_lr);
  size_t i = 0;
  while (i < boundaries.size() && step > boundaries[i])
    ++i;
  return values[i];
}

// Parameters named as in sgd_reference.py.
train::NamedParameters makeParameters(const std::map<std::string, at::Tensor>& ref) {
  train::NamedParameters out;
  for (const char* n : {"conv.weight", "conv.bias", "bn.weight", "fc.weight", "fc.bias"}) {
    out.emplace_back(n, ref.at(std::string("init.") + n).clone().set_requires_grad(true));
  }
  return out;
}

}  // namespace

class TrainInfraTest : public QObject {
  Q_OBJECT
 private slots:
  // --- learning-rate schedule ------------------------------------------------------------
  void scheduleMatchesTaoAtItsBoundaries() {
    train::LrScheduleOptions o;
    o.warmup_learning_rate = 0.0001;
    o.init_learning_rate = 0.02;
    o.warmup_steps = 1000;
    o.learning_rate_steps = {60000, 80000};
    o.learning_rate_decay_levels = {0.1, 0.01};
    const train::LrSchedule schedule(o);
    for (uint64_t step : {0ull, 1ull, 500ull, 999ull, 1000ull, 1001ull, 59999ull, 60000ull,
                          60001ull, 79999ull, 80000ull, 80001ull, 1000000ull}) {
      const double tao = taoLearningRate(step, 0.0001f, 0.02f, 1000, o.learning_rate_steps,
                                         o.learning_rate_decay_levels);
      // TAO's values are float32; ours are double from the decimal the spec holds.
      QVERIFY2(std::abs(schedule.at(step) - tao) <= 1e-7 * std::max(1.0, tao) + 1e-9,
               qPrintable(QString("step %1: ours %2, TAO %3")
                              .arg(step)
                              .arg(schedule.at(step), 0, 'g', 10)
                              .arg(tao, 0, 'g', 10)));
    }
    // The exact boundary semantics.
    QCOMPARE(schedule.at(0), 0.0001);
    QCOMPARE(schedule.at(999), 0.0001 + 999.0 / 1000.0 * (0.02 - 0.0001));
    QCOMPARE(schedule.at(1000), 0.02);
    QCOMPARE(schedule.at(60000), 0.02);        // still the previous rate at the boundary
    QCOMPARE(schedule.at(60001), 0.02 * 0.1);  // the rate changes after it
    QCOMPARE(schedule.at(80000), 0.02 * 0.1);
    QCOMPARE(schedule.at(80001), 0.02 * 0.01);

    // No warmup: init from step 0.
    train::LrScheduleOptions none = o;
    none.warmup_steps = 0;
    QCOMPARE(train::LrSchedule(none).at(0), 0.02);

    // Bad lists.
    train::LrScheduleOptions bad = o;
    bad.learning_rate_decay_levels = {0.1};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, train::LrSchedule{bad});
    bad = o;
    bad.learning_rate_steps = {80000, 60000};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, train::LrSchedule{bad});
  }

  void scheduleFromTheSpec() {
    const auto loaded = mrcnn::spec::loadSpecText(
        "warmup_learning_rate: 0.001\ninit_learning_rate: 0.04\nwarmup_steps: 10\n"
        "learning_rate_steps: \"[100, 200]\"\nlearning_rate_decay_levels: \"[0.1, 0.02]\"\n"
        "total_steps: 300\ndata_config {\n  shapes_dataset {\n  }\n}\n",
        "inline", ".");
    QVERIFY2(loaded.ok(), loaded.errors().empty() ? "" : loaded.errors()[0].format().c_str());
    const train::LrSchedule s = train::LrSchedule::fromSpec(loaded);
    QCOMPARE(s.at(0), 0.001);  // the decimal written, not float32's 0.0010000000475
    QCOMPARE(s.at(5), 0.001 + 0.5 * (0.04 - 0.001));
    QCOMPARE(s.at(100), 0.04);
    QCOMPARE(s.at(101), 0.04 * 0.1);
    QCOMPARE(s.at(201), 0.04 * 0.02);
  }

  // --- solver ------------------------------------------------------------------------------
  void solverMatchesTorchSgd() {
    if (qEnvironmentVariableIsEmpty("MRCNN_PYTHON")) QSKIP("MRCNN_PYTHON is not set");
    QTemporaryDir dir;
    const QString ref_file = dir.filePath("sgd.pt");
    const QString err =
        mrcnn::testing::runReferenceScript("tests/engine/train/sgd_reference.py", {ref_file});
    QVERIFY2(err.isEmpty(), qPrintable(err));
    const auto ref = asMap(model::readStateDict(ref_file.toStdString()));
    const at::Tensor lrs = ref.at("lr");
    const at::Tensor config = ref.at("config");
    for (const std::string scenario : {"plain", "clip"}) {
      train::SolverOptions o;
      o.momentum = config[0].item<double>();
      o.l2_weight_decay = config[1].item<double>();
      o.clip_norm = scenario == "clip" ? config[2].item<double>() : 0.0;
      o.bias_gradient_scale = 2.0;
      train::NamedParameters params = makeParameters(ref);
      train::Solver solver(params, o);
      double worst = 0;
      bool clipped_once = false;
      for (int64_t step = 0; step < lrs.size(0); ++step) {
        for (auto& [name, p] : params)
          p.mutable_grad() = ref.at("grad." + std::to_string(step) + "." + name).clone();
        const train::StepResult r = solver.step(lrs[step].item<double>());
        QVERIFY(r.applied);
        clipped_once |= r.clipped;
        for (const auto& [name, p] : params) {
          const at::Tensor& want =
              ref.at("expected." + scenario + "." + std::to_string(step) + "." + name);
          const double d = maxAbsDiff(p.detach(), want);
          worst = std::max(worst, d);
          QVERIFY2(d <= 1e-6, qPrintable(QString("%1 step %2 %3: max |diff| %4")
                                             .arg(scenario.c_str())
                                             .arg(step)
                                             .arg(name.c_str())
                                             .arg(d)));
          QVERIFY(!p.grad().defined());  // zeroed after the step
        }
      }
      if (scenario == "clip") QVERIFY(clipped_once);
      qInfo("solver vs torch.optim.SGD (%s): max |diff| %.3g over %lld steps", scenario.c_str(),
            worst, static_cast<long long>(lrs.size(0)));
    }
  }

  void solverDecayRuleAndL1ByHand() {
    QVERIFY(train::Solver::isDecayed("backbone.body.conv1.weight", at::zeros({2, 2, 3, 3})));
    QVERIFY(!train::Solver::isDecayed("rpn.head.conv.0.0.bias", at::zeros({2})));
    QVERIFY(!train::Solver::isDecayed("backbone.fpn.norm.weight", at::zeros({2})));

    // One step, no momentum: w' = w - lr (g + l2 w + l1/2 sign(w)) for decayed weights;
    // b' = b - lr × 2 g for biases (TAO's doubling), nothing else.
    const at::Tensor w0 = at::tensor({0.5, -2.0, 0.0, 3.0}, at::kDouble).reshape({2, 2});
    const at::Tensor b0 = at::tensor({1.0, -1.0}, at::kDouble);
    const at::Tensor gw = at::tensor({0.1, 0.2, -0.3, 0.4}, at::kDouble).reshape({2, 2});
    const at::Tensor gb = at::tensor({0.25, -0.5}, at::kDouble);
    train::SolverOptions o;
    o.momentum = 0;
    o.l2_weight_decay = 0.01;
    o.l1_weight_decay = 0.2;
    train::NamedParameters params = {{"fc.weight", w0.clone().set_requires_grad(true)},
                                     {"fc.bias", b0.clone().set_requires_grad(true)}};
    train::Solver solver(params, o);
    params[0].second.mutable_grad() = gw.clone();
    params[1].second.mutable_grad() = gb.clone();
    const train::StepResult r = solver.step(0.5);
    QVERIFY(r.applied);
    const double lr = 0.5;
    const double w_hand[4] = {0.5 - lr * (0.1 + 0.01 * 0.5 + 0.1 * 1),
                              -2.0 - lr * (0.2 + 0.01 * -2.0 + 0.1 * -1),
                              0.0 - lr * (-0.3 + 0 + 0),  // sign(0) = 0
                              3.0 - lr * (0.4 + 0.01 * 3.0 + 0.1 * 1)};
    const at::Tensor w = params[0].second.detach().reshape({4});
    for (int i = 0; i < 4; ++i)
      QVERIFY2(std::abs(w[i].item<double>() - w_hand[i]) < 1e-15, qPrintable(QString::number(i)));
    QCOMPARE(params[1].second[0].item<double>(), 1.0 - lr * 2 * 0.25);
    QCOMPARE(params[1].second[1].item<double>(), -1.0 - lr * 2 * -0.5);
    // The reported norm includes the regularisation and the doubling.
    const at::Tensor full_w = gw + 0.01 * w0 + 0.1 * w0.sign();
    const double norm =
        std::sqrt(full_w.pow(2).sum().item<double>() + (2 * gb).pow(2).sum().item<double>());
    QVERIFY(std::abs(r.grad_norm - norm) < 1e-12);
  }

  void clippingScalesToTheNorm() {
    train::SolverOptions o;
    o.momentum = 0;
    o.clip_norm = 1.0;
    train::NamedParameters params = {{"a.weight", at::zeros({2, 2}).set_requires_grad(true)}};
    train::Solver solver(params, o);
    params[0].second.mutable_grad() = at::full({2, 2}, 2.5);  // norm 5
    train::StepResult r = solver.step(1.0);
    QVERIFY(r.clipped);
    QCOMPARE(r.grad_norm, 5.0);
    const double after = params[0].second.detach().norm().item<double>();
    QVERIFY2(std::abs(after - 1.0) < 1e-6, qPrintable(QString::number(after)));
    // Below the limit: untouched.
    params[0].second.mutable_grad() = at::full({2, 2}, 0.1);
    const at::Tensor before = params[0].second.detach().clone();
    r = solver.step(1.0);
    QVERIFY(!r.clipped);
    QVERIFY(at::allclose(params[0].second.detach(), before - 0.1, 0, 1e-7));
  }

  void accumulationEqualsOneBigBatch() {
    at::manual_seed(3);
    const at::Tensor x = at::randn({8, 6});
    const at::Tensor y = at::randn({8, 2});
    const auto run = [&](uint32_t parts) {
      at::manual_seed(11);
      torch::nn::Linear fc(6, 2);
      train::SolverOptions o;
      o.accumulation_steps = parts;
      o.l2_weight_decay = 1e-3;
      o.clip_norm = 0.3;
      train::Solver solver(train::Solver::trainableParameters(*fc), o);
      for (int step = 0; step < 3; ++step) {
        for (uint32_t k = 0; k < parts; ++k) {
          const int64_t n = 8 / parts;
          const at::Tensor xi = x.narrow(0, k * n, n), yi = y.narrow(0, k * n, n);
          (fc->forward(xi) - yi).pow(2).mean().backward();
        }
        solver.step(0.1);
      }
      return std::make_pair(fc->weight.detach().clone(), fc->bias.detach().clone());
    };
    const auto one = run(1);
    const auto four = run(4);
    const double dw = maxAbsDiff(one.first, four.first), db = maxAbsDiff(one.second, four.second);
    qInfo("accumulation over 4 micro-batches vs one batch of 8: max |diff| %.3g", std::max(dw, db));
    QVERIFY2(dw < 1e-6 && db < 1e-6, qPrintable(QString("%1 %2").arg(dw).arg(db)));
    // And the accumulation is not a no-op: without the ÷4 the result would differ.
    QVERIFY(maxAbsDiff(one.first, at::zeros_like(one.first)) > 0);
  }

  void solverStateRoundTripsAndChecksNames() {
    train::NamedParameters params = {{"a.weight", at::ones({3, 2}).set_requires_grad(true)},
                                     {"a.bias", at::ones({3}).set_requires_grad(true)}};
    train::Solver solver(params, {});
    params[0].second.mutable_grad() = at::full({3, 2}, 0.5);
    solver.step(0.1);  // only a.weight had a gradient: one buffer
    const model::StateDict state = solver.stateDict("optimizer.");
    QCOMPARE(state.size(), size_t(2));
    QCOMPARE(state[0].first, std::string("optimizer.momentum_buffer.a.weight"));
    train::Solver other(params, {});
    other.loadStateDict(state, "optimizer.", "x.pt");
    QCOMPARE(other.stepsTaken(), uint64_t(1));
    QVERIFY(at::equal(other.stateDict("optimizer.")[0].second, state[0].second));

    // A buffer read from a checkpoint (contiguous) takes its parameter's layout: a
    // channels-last convolution weight's buffer is channels-last, as its gradient is (the
    // update's multi-tensor operations run fused on a GPU only over tensors of one layout).
    const at::Tensor conv = at::ones({4, 3, 2, 2}).contiguous(at::MemoryFormat::ChannelsLast);
    train::NamedParameters conv_params = {{"c.weight", conv.set_requires_grad(true)}};
    train::Solver conv_solver(conv_params, {});
    conv_solver.loadStateDict({{"optimizer.momentum_buffer.c.weight", at::rand({4, 3, 2, 2})},
                               {"optimizer.steps_taken", at::scalar_tensor(3, at::kLong)}},
                              "optimizer.", "c.pt");
    const at::Tensor loaded = conv_solver.stateDict("optimizer.")[0].second;
    QVERIFY(loaded.is_contiguous(at::MemoryFormat::ChannelsLast) && !loaded.is_contiguous());

    model::StateDict foreign = state;
    foreign[0].first = "optimizer.momentum_buffer.b.weight";
    try {
      other.loadStateDict(foreign, "optimizer.", "x.pt");
      QFAIL("no error");
    } catch (const model::StateDictError& e) {
      QVERIFY2(QString(e.what()).contains("x.pt") &&
                   QString(e.what()).contains("no trainable parameter b.weight"),
               e.what());
    }
    model::StateDict wrong_shape = state;
    wrong_shape[0].second = at::zeros({2, 3});
    QVERIFY_THROWS_EXCEPTION(model::StateDictError,
                             other.loadStateDict(wrong_shape, "optimizer.", "x.pt"));
  }

  // --- loss scaler ---------------------------------------------------------------------------
  void lossScalerSkipsBacksOffAndGrows() {
    train::LossScalerOptions so;
    so.enabled = true;
    so.growth_interval = 3;
    train::LossScaler scaler(so);
    QCOMPARE(scaler.scale(), 65536.0);
    QCOMPARE(scaler.scaleLoss(at::scalar_tensor(2.0)).item<double>(), 131072.0);

    train::SolverOptions o;
    o.momentum = 0;
    train::NamedParameters params = {{"w.weight", at::zeros({4, 1}).set_requires_grad(true)}};
    train::Solver solver(params, o);
    const at::Tensor g = at::tensor({1e-6f, 2e-5f, -3e-7f, 0.5f}).reshape({4, 1});
    // fp16 gradients of a scaled loss, as backward under autocast gives them.
    const auto setScaled = [&](double scale) {
      params[0].second.mutable_grad() = (g * scale).to(at::kHalf).to(at::kFloat);
    };

    setScaled(scaler.scale());
    train::StepResult r = solver.step(1.0, &scaler);
    QVERIFY(r.applied);
    // Unscaled correctly (within fp16's relative precision), and the tiny 3e-7 survived
    // because the scale lifted it out of fp16's subnormal range.
    QVERIFY(at::allclose(params[0].second.detach(), -g, 1e-3, 0));
    QVERIFY(params[0].second[2].item<float>() != 0);

    // An overflow in fp16: inf gradients, the step is skipped and the scale halved.
    const at::Tensor before = params[0].second.detach().clone();
    setScaled(1e6);  // 0.5e6 overflows fp16 (max 65504)
    QVERIFY(params[0].second.grad().isinf().any().item<bool>());
    r = solver.step(1.0, &scaler);
    QVERIFY(!r.applied && !r.finite);
    QVERIFY(at::equal(params[0].second.detach(), before));
    QVERIFY(!params[0].second.grad().defined());
    QCOMPARE(scaler.skippedSteps(), uint64_t(1));
    QCOMPARE(scaler.scale(), 32768.0);
    QCOMPARE(scaler.goodStepsInARow(), 0u);

    // A NaN also skips.
    params[0].second.mutable_grad() = at::full({4, 1}, NAN);
    QVERIFY(!solver.step(1.0, &scaler).applied);
    QCOMPARE(scaler.skippedSteps(), uint64_t(2));
    QCOMPARE(scaler.scale(), 16384.0);

    // growth_interval good steps in a row double it.
    for (int i = 0; i < 3; ++i) {
      setScaled(scaler.scale());
      QVERIFY(solver.step(0.0, &scaler).applied);
    }
    QCOMPARE(scaler.scale(), 32768.0);
    QCOMPARE(scaler.goodStepsInARow(), 0u);
    QCOMPARE(solver.stepsTaken(), uint64_t(4));

    // State round trip.
    train::LossScaler restored(so);
    restored.loadStateDict(scaler.stateDict("loss_scaler."), "loss_scaler.", "c.pt");
    QCOMPARE(restored.scale(), 32768.0);
    QCOMPARE(restored.skippedSteps(), uint64_t(2));
    QVERIFY_THROWS_EXCEPTION(model::StateDictError, restored.loadStateDict({}, "", "c.pt"));

    // Disabled: scale 1, no counting; an inf gradient still skips the step (the caller stops).
    train::LossScaler off;
    QCOMPARE(off.scale(), 1.0);
    params[0].second.mutable_grad() = at::full({4, 1}, INFINITY);
    r = solver.step(1.0, &off);
    QVERIFY(!r.applied && !r.finite);
    QCOMPARE(off.skippedSteps(), uint64_t(0));
  }

  // --- checkpoints --------------------------------------------------------------------------
  void checkpointRoundTripIsBitIdentical() {
    QTemporaryDir dir;
    at::manual_seed(5);
    train::Checkpoint c;
    c.step = 1234;
    c.epoch = 3;
    c.data_position = 56;
    c.model = {{"conv.weight", at::randn({4, 3, 3, 3})},
               {"conv.bias", at::randn({4}).to(at::kDouble)},
               {"head.half", at::randn({5}).to(at::kHalf)},
               {"bn.num_batches_tracked", at::scalar_tensor(int64_t{77}, at::kLong)},
               {"mask.bytes", at::randint(0, 255, {7}, at::kByte)}};
    c.optimizer = {{"momentum_buffer.conv.weight", at::randn({4, 3, 3, 3})},
                   {"steps_taken", at::scalar_tensor(int64_t{1234}, at::kLong)}};
    train::LossScalerOptions so;
    so.enabled = true;
    c.loss_scaler = train::LossScaler(so).stateDict();
    // (not a raw string: Qt 6.4's moc misreads \" inside one)
    c.extra_json = "{\"spec\":\"shapes \\\"quoted\\\"\",\"seed\":123}";
    c.rng = train::captureRng();
    const at::Tensor expected_random = at::rand({16});  // what the generator gives after capture
    at::rand({100});                                    // move it on

    const fs::path file = fs::path(dir.path().toStdString()) / "model.step-1234.pt";
    train::writeCheckpoint(c, file);
    const train::Checkpoint back = train::readCheckpoint(file);
    QCOMPARE(back.step, c.step);
    QCOMPARE(back.epoch, c.epoch);
    QCOMPARE(back.data_position, c.data_position);
    QCOMPARE(back.extra_json, c.extra_json);
    for (const auto* pair : {&c.model, &c.optimizer, &c.loss_scaler}) {
      const model::StateDict& got = pair == &c.model       ? back.model
                                    : pair == &c.optimizer ? back.optimizer
                                                           : back.loss_scaler;
      QCOMPARE(got.size(), pair->size());
      for (size_t i = 0; i < got.size(); ++i) {
        QCOMPARE(got[i].first, (*pair)[i].first);
        QCOMPARE(got[i].second.scalar_type(), (*pair)[i].second.scalar_type());
        QVERIFY2(at::equal(got[i].second, (*pair)[i].second), got[i].first.c_str());
      }
    }
    train::restoreRng(back.rng);
    QVERIFY(at::equal(at::rand({16}), expected_random));

    // Python reads it with weights_only=True.
    if (qEnvironmentVariableIsEmpty("MRCNN_PYTHON")) QSKIP("MRCNN_PYTHON is not set");
    QString out;
    const QString err = mrcnn::testing::runReferenceScript(
        "tests/engine/train/read_checkpoint.py", {QString::fromStdString(file.string())}, &out);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    const QJsonObject j = QJsonDocument::fromJson(out.toUtf8()).object();
    QVERIFY2(!j.isEmpty(), qPrintable(out));
    QCOMPARE(j["type"].toString(), QString("dict"));
    QCOMPARE(j["step"].toInt(), 1234);
    QCOMPARE(j["epoch"].toInt(), 3);
    QCOMPARE(j["data_position"].toInt(), 56);
    const QJsonObject meta = j["meta"].toObject();
    QCOMPARE(meta["format"].toString(), QString("mrcnn-workbench checkpoint"));
    QCOMPARE(meta["version"].toInt(), 1);
    QCOMPARE(meta["extra"].toObject()["spec"].toString(), QString("shapes \"quoted\""));
    const QJsonObject tensors = j["tensors"].toObject();
    QCOMPARE(tensors["model.head.half"].toObject()["dtype"].toString(), QString("float16"));
    QCOMPARE(tensors["rng.cpu"].toObject()["dtype"].toString(), QString("uint8"));
    QCOMPARE(tensors["loss_scaler.scale"].toObject()["sum"].toDouble(), 65536.0);
    const double sum = c.model[0].second.to(at::kDouble).sum().item<double>();
    QVERIFY(std::abs(tensors["model.conv.weight"].toObject()["sum"].toDouble() - sum) < 1e-9);
  }

  void storeKeepsTheLastKAndTheBest() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    train::CheckpointStoreOptions o;
    o.keep_last = 2;
    {
      train::CheckpointStore store(root, o);
      QVERIFY(!store.last());
      QVERIFY(!store.loadLatest());
      const double metrics[] = {0.1, 0.5, 0.3, 0.2, 0.4};
      for (uint64_t step = 1; step <= 5; ++step) {
        train::Checkpoint c;
        c.step = step;
        c.model = {{"w", at::full({2}, static_cast<double>(step))}};
        store.save(c, metrics[step - 1]);
      }
      QCOMPARE(store.steps(), (std::vector<uint64_t>{2, 4, 5}));
      QCOMPARE(store.best()->filename().string(), std::string("model.step-2.pt"));
      QCOMPARE(store.last()->filename().string(), std::string("model.step-5.pt"));
      QCOMPARE(*store.bestMetric(), 0.5);
    }
    // A new store (a resumed run) reads the pointers back.
    train::CheckpointStore store(root, o);
    QCOMPARE(*store.bestMetric(), 0.5);
    QCOMPARE(store.loadLatest()->step, uint64_t(5));
    QVERIFY(!store.isBetter(0.45));
    QVERIFY(!store.reportMetric(4, 0.45));
    QVERIFY(!store.reportMetric(3, 0.9));  // no such checkpoint any more
    QVERIFY(store.reportMetric(5, 0.6));
    QCOMPARE(readAll(root / "best"), std::string("model.step-5.pt\n0.59999999999999998\n"));
    train::Checkpoint c;
    c.step = 6;
    c.model = {{"w", at::zeros({2})}};
    store.save(c);
    QCOMPARE(store.steps(), (std::vector<uint64_t>{5, 6}));  // 2 no longer the best
    QCOMPARE(readAll(root / "last"), std::string("model.step-6.pt\n"));

    // Lower is better (a loss).
    QTemporaryDir dir2;
    train::CheckpointStoreOptions lower;
    lower.higher_is_better = false;
    train::CheckpointStore by_loss(dir2.path().toStdString(), lower);
    c.step = 1;
    by_loss.save(c, 2.0);
    c.step = 2;
    by_loss.save(c, 3.0);
    QCOMPARE(by_loss.best()->filename().string(), std::string("model.step-1.pt"));
  }

  void aCrashDuringASaveLeavesThePreviousCheckpoint() {
    for (const char* stage : {"temporary written", "checkpoint renamed", "last written"}) {
      QTemporaryDir dir;
      const fs::path root = dir.path().toStdString();
      {
        train::CheckpointStore store(root, {});
        train::Checkpoint c;
        c.step = 1;
        c.model = {{"w", at::full({1000}, 1.0)}};
        store.save(c, 0.3);
      }
      const pid_t pid = ::fork();
      QVERIFY(pid >= 0);
      if (pid == 0) {
        train::CheckpointStoreOptions o;
        o.fault_injection = [stage](std::string_view s) {
          if (s == stage) ::_exit(9);  // as if killed here
        };
        train::CheckpointStore store(root, o);
        train::Checkpoint c;
        c.step = 2;
        c.model = {{"w", at::full({1000}, 2.0)}};
        store.save(c, 0.9);
        ::_exit(0);
      }
      int status = 0;
      ::waitpid(pid, &status, 0);
      QVERIFY(WIFEXITED(status));
      QCOMPARE(WEXITSTATUS(status), 9);

      const bool second_is_last = std::string(stage) == "last written";
      if (std::string(stage) == "temporary written") {
        QVERIFY(fs::exists(root / ".model.step-2.pt.partial"));  // the torn leftover
      }
      train::CheckpointStore store(root, {});
      QVERIFY(!fs::exists(root / ".model.step-2.pt.partial"));  // cleaned up
      const auto latest = store.loadLatest();
      QVERIFY(latest.has_value());
      QCOMPARE(latest->step, uint64_t(second_is_last ? 2 : 1));
      QCOMPARE(latest->model[0].second[0].item<double>(), second_is_last ? 2.0 : 1.0);
      // The best pointer was not moved by the interrupted save, and still names a valid file.
      QCOMPARE(store.best()->filename().string(), std::string("model.step-1.pt"));
      QCOMPARE(train::readCheckpoint(*store.best()).step, uint64_t(1));
    }
  }

  void corruptAndForeignFilesAreNamed() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    train::Checkpoint c;
    c.step = 7;
    c.model = {{"w", at::randn({5000})}};
    const fs::path good = root / "model.step-7.pt";
    train::writeCheckpoint(c, good);
    const std::string bytes = readAll(good);

    const auto expectError = [](const fs::path& file, const QString& what) {
      try {
        train::readCheckpoint(file);
        QFAIL(qPrintable("no error for " + what));
      } catch (const train::CheckpointError& e) {
        const QString m = e.what();
        QVERIFY2(m.startsWith(QString::fromStdString(file.string()) + ": "), e.what());
        QVERIFY2(m.contains(what), e.what());
      }
    };
    const fs::path truncated = root / "truncated.pt";
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    expectError(truncated, "truncated or corrupt");

    const fs::path garbage = root / "garbage.pt";
    std::ofstream(garbage, std::ios::binary) << "this is not a zip file at all";
    expectError(garbage, "truncated or corrupt");

    const fs::path empty = root / "empty.pt";
    std::ofstream(empty, std::ios::binary).flush();
    expectError(empty, "truncated or corrupt");

    const fs::path weights = root / "weights.pt";
    model::writeStateDict({{"conv.weight", at::zeros({2})}}, weights);
    expectError(weights, "not a training checkpoint of mrcnn-workbench");

    expectError(root / "missing.pt", "no such checkpoint file");

    // A `last` pointer to a file that is gone.
    const fs::path ckpts = root / "ckpts";
    fs::create_directories(ckpts);
    std::ofstream(ckpts / "last") << "model.step-9.pt\n";
    train::CheckpointStore store(ckpts, {});
    try {
      store.loadLatest();
      QFAIL("no error");
    } catch (const train::CheckpointError& e) {
      QVERIFY2(QString(e.what()).contains((ckpts / "last").c_str()) &&
                   QString(e.what()).contains("model.step-9.pt, which does not exist"),
               e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TrainInfraTest)
#include "test_train_infra.moc"
