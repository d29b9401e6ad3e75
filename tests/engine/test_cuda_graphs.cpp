// CUDA graphs for the dense stages (engine/runtime/graphed_callable.h,
// engine/runtime/dense_graphs.h). On the CPU, with the eager recorder (which runs the recorded
// body at each replay, so only the buffers and the autograd plumbing are under test): the
// replayed outputs and the gradients the parameters accumulate equal eager calls' bit for bit
// over SGD steps and accumulated micro-batches; a new shape is recorded, shapes past the cap
// run eagerly and say so, a failed recording falls back to eager runs, weights that moved are
// recorded again; the model's losses and gradients, and its detections, through the dense
// runner equal its own; and each reason the graphs are off is given. Where a GPU is: the same
// model with real CUDA graphs against eager training steps and eager inference.
#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/torch.h>  // before Qt: its "slots" macro breaks LibTorch's headers

#include <QtTest>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/runtime/autocast_scope.h"
#include "engine/runtime/graphed_callable.h"
#include "engine/runtime/dense_graphs.h"
#include "tests/engine/small_mask_rcnn.h"
#include "tests/engine/tensor_compare.h"

namespace model = mrcnn::model;
namespace runtime = mrcnn::runtime;
namespace train = mrcnn::train;
using mrcnn::testing::relError;
using namespace mrcnn::testing::small_mask_rcnn;

namespace {

// Two trainable convolutions after a frozen one, a batch norm between them (its running
// statistics updated by each training call); a third output from the frozen one alone.
struct Stages : torch::nn::Module {
  Stages() {
    frozen = register_module("frozen", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 6, 3).padding(1)));
    first = register_module("first", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 8, 3).padding(1)));
    second = register_module("second", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 4, 1)));
    norm = register_module("norm", torch::nn::BatchNorm2d(8));
    for (at::Tensor& p : frozen->parameters())
      p.set_requires_grad(false);
  }
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& in) {
    const at::Tensor base = frozen->forward(in[0]);
    const at::Tensor a = torch::relu(norm->forward(first->forward(base)));
    return {a, second->forward(a), base.detach() * 2};
  }
  std::vector<at::Tensor> trainable() {
    std::vector<at::Tensor> out;
    for (const at::Tensor& p : parameters())
      if (p.requires_grad()) out.push_back(p);
    return out;
  }
  torch::nn::Conv2d frozen{nullptr}, first{nullptr}, second{nullptr};
  torch::nn::BatchNorm2d norm{nullptr};
};

std::shared_ptr<Stages> makeStages(uint64_t seed) {
  at::manual_seed(seed);
  return std::make_shared<Stages>();
}

at::Tensor lossOf(const std::vector<at::Tensor>& out) {
  return (out[0] * out[0].detach().sign()).sum() + out[1].pow(2).mean() + out[2].mean();
}

std::unique_ptr<runtime::GraphedCallable> graphedStages(const std::shared_ptr<Stages>& s,
                                                        std::vector<std::string>& lines,
                                                        size_t max_shapes = 4) {
  runtime::GraphedCallableOptions options;
  options.warmup_runs = 1;
  options.max_shapes = max_shapes;
  std::vector<at::Tensor> watched = s->parameters();
  for (const at::Tensor& b : s->buffers())
    watched.push_back(b);
  return std::make_unique<runtime::GraphedCallable>(
      [s](const std::vector<at::Tensor>& in) { return s->run(in); }, s->trainable(),
      std::move(watched), std::make_unique<runtime::EagerRecorder>(),
      [&lines](const std::string& l) { lines.push_back(l); }, options);
}

bool equalLists(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].defined() != b[i].defined() || (a[i].defined() && !torch::equal(a[i], b[i])))
      return false;
  return true;
}

std::vector<at::Tensor> gradsOf(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : params)
    out.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
  return out;
}

void sgd(const std::vector<at::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (const at::Tensor& p : params) {
    if (!p.grad().defined()) continue;
    at::Tensor param = p;
    param.sub_(param.grad() * 0.05);
    param.mutable_grad() = at::Tensor();
  }
}

// The first parameter whose gradient differs between two models (defined in one only, or
// beyond `tolerance` relative; 0: not bit for bit), or "" when none does.
std::string gradientsDiffer(model::MaskRCNNImpl& a, model::MaskRCNNImpl& b, double tolerance) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    const at::Tensor ga = pa[i].value().grad(), gb = pb[i].value().grad();
    if (ga.defined() != gb.defined()) return pa[i].key() + ": a gradient in one model only";
    if (!ga.defined()) continue;
    if (tolerance == 0 ? !torch::equal(ga, gb) : relError(ga, gb) > tolerance)
      return pa[i].key() + ": the gradients differ";
  }
  return "";
}

std::vector<std::string> lossRow(const model::MaskRCNNLosses& l) {
  std::vector<std::string> row;
  for (const at::Tensor* t : {&l.rpn_objectness, &l.rpn_box, &l.classifier, &l.box_reg, &l.mask})
    row.push_back(std::to_string(t->item<double>()));
  return row;
}

}  // namespace

class TestCudaGraphs : public QObject {
  Q_OBJECT

 private slots:
  // Over three SGD steps of two micro-batches each: every replayed output and every gradient
  // equal to the eager module's (same weights, same inputs). A replay that read stale inputs
  // or handed no gradient over fails this.
  void replaysEqualEagerCallsOverSteps() {
    const auto graphed = makeStages(7), eager = makeStages(7);
    std::vector<std::string> lines;
    auto callable = graphedStages(graphed, lines);
    at::manual_seed(11);
    for (int step = 0; step < 3; ++step) {
      for (int micro = 0; micro < 2; ++micro) {
        const at::Tensor x = torch::randn({2, 3, 12, 10});
        const std::vector<at::Tensor> a = (*callable)({x});
        const std::vector<at::Tensor> b = eager->run({x});
        QVERIFY(equalLists(a, b));
        lossOf(a).backward();
        lossOf(b).backward();
        QVERIFY(equalLists(gradsOf(graphed->trainable()), gradsOf(eager->trainable())));
        QVERIFY(graphed->trainable()[0].grad().defined());
      }
      sgd(graphed->trainable());
      sgd(eager->trainable());
    }
    // The running statistics saw each call once, as the eager module's did (not the warm-up's).
    QVERIFY(equalLists(graphed->buffers(), eager->buffers()));
    QCOMPARE(callable->recordedShapes(), size_t{1});
    QCOMPARE(callable->replays(), uint64_t{6});
    QCOMPARE(callable->eagerCalls(), uint64_t{0});
    QCOMPARE(lines.size(), size_t{1});
    QVERIFY2(lines[0].find("recorded the dense stages' forward and backward for inputs [2, 3, 12, 10]") !=
                 std::string::npos,
             lines[0].c_str());
    // The frozen convolution got no gradient.
    QVERIFY(!graphed->frozen->weight.grad().defined());
  }

  // A second shape is recorded beside the first; past the cap a shape runs eagerly, with the
  // reason logged once and in the summary; without gradient mode the body runs eagerly.
  void shapesAreRecordedUpToTheCap() {
    const auto graphed = makeStages(3), eager = makeStages(3);
    std::vector<std::string> lines;
    auto callable = graphedStages(graphed, lines, /*max_shapes=*/2);
    for (const auto& shape : std::vector<std::vector<int64_t>>{
             {1, 3, 8, 8}, {1, 3, 16, 8}, {1, 3, 8, 8}, {1, 3, 4, 4}, {2, 3, 4, 4}}) {
      const at::Tensor x = torch::randn(shape);
      const std::vector<at::Tensor> a = (*callable)({x});
      QVERIFY(equalLists(a, eager->run({x})));
      lossOf(a).backward();
    }
    QCOMPARE(callable->recordedShapes(), size_t{2});
    QCOMPARE(callable->replays(), uint64_t{3});
    QCOMPARE(callable->eagerCalls(), uint64_t{2});
    QCOMPARE(lines.size(), size_t{3});  // two recordings, one fallback
    QVERIFY2(lines[2].find("[1, 3, 4, 4] and any further shape run eagerly: 2 shapes") !=
                 std::string::npos,
             lines[2].c_str());
    QVERIFY(callable->summary().find("2 input shape(s) recorded, 3 replays, 2 eager calls") !=
            std::string::npos);
    {
      const at::Tensor x8 = torch::randn({1, 3, 8, 8});
      torch::NoGradGuard no_grad;  // training's evaluation: eager, not counted
      QVERIFY(equalLists((*callable)({x8}), eager->run({x8})));
    }
    QCOMPARE(callable->eagerCalls(), uint64_t{2});
    QCOMPARE(callable->replays(), uint64_t{3});
  }

  // Autocast's state is part of a recording's key: a call under bf16 autocast gets its own.
  void autocastIsPartOfTheKey() {
    const auto graphed = makeStages(12), eager = makeStages(12);
    std::vector<std::string> lines;
    auto callable = graphedStages(graphed, lines);
    const at::Tensor x = torch::randn({1, 3, 8, 8});
    QVERIFY(equalLists((*callable)({x}), eager->run({x})));
    {
      const train::AutocastScope autocast(true, c10::kCPU, at::kBFloat16);
      const std::vector<at::Tensor> a = (*callable)({x});
      QCOMPARE(a[1].scalar_type(), at::kBFloat16);
      QVERIFY(equalLists(a, eager->run({x})));
    }
    QCOMPARE(callable->recordedShapes(), size_t{2});
  }

  // A recording that fails (here the recorder refuses, as a capture refuses a host sync) is
  // logged with its error, and every call then runs eagerly with the same results.
  void aFailedRecordingRunsEagerly() {
    struct Refusing : runtime::EagerRecorder {
      std::unique_ptr<runtime::Recording> record(const std::function<void()>&, bool) override {
        throw std::runtime_error("operation not permitted when stream is capturing\nmore");
      }
    };
    const auto graphed = makeStages(8), eager = makeStages(8);
    std::vector<std::string> lines;
    runtime::GraphedCallableOptions options;
    options.warmup_runs = 1;
    runtime::GraphedCallable callable(
        [graphed](const std::vector<at::Tensor>& in) { return graphed->run(in); },
        graphed->trainable(), graphed->parameters(), std::make_unique<Refusing>(),
        [&lines](const std::string& l) { lines.push_back(l); }, options);
    for (int call = 0; call < 2; ++call) {
      const at::Tensor x = torch::randn({1, 3, 8, 8});
      const std::vector<at::Tensor> a = callable({x}), b = eager->run({x});
      QVERIFY(equalLists(a, b));
      lossOf(a).backward();
      lossOf(b).backward();
      QVERIFY(equalLists(gradsOf(graphed->trainable()), gradsOf(eager->trainable())));
    }
    QCOMPARE(callable.eagerCalls(), uint64_t{2});
    QCOMPARE(callable.recordedShapes(), size_t{0});
    QCOMPARE(lines.size(), size_t{1});
    QCOMPARE(lines[0], std::string("eager replay: recording failed, every call runs eagerly: "
                                   "operation not permitted when stream is capturing"));
  }

  // Weights that no longer sit where they were recorded (set_data, as a layout change or a
  // load does) are recorded again, and the replays read the new ones.
  void movedWeightsAreRecordedAgain() {
    const auto graphed = makeStages(5), eager = makeStages(5);
    std::vector<std::string> lines;
    auto callable = graphedStages(graphed, lines);
    const at::Tensor x = torch::randn({1, 3, 8, 8});
    (void)(*callable)({x});
    {
      torch::NoGradGuard no_grad;
      for (const auto& s : {graphed, eager})
        s->second->weight.set_data(s->second->weight * 1.5);
    }
    const std::vector<at::Tensor> a = (*callable)({x});
    QVERIFY(equalLists(a, eager->run({x})));
    QCOMPARE(lines.size(), size_t{3});
    QVERIFY2(lines[1].find("recording again") != std::string::npos, lines[1].c_str());
    QVERIFY(callable->summary().find("recorded again 1 time(s)") != std::string::npos);
  }

  // The model's training losses and its gradients through the dense runner (eager replays)
  // equal its own, over two steps.
  void modelLossesThroughTheRunnerEqualItsOwn() {
    for (const auto layout : {model::ActivationLayout::Nchw, model::ActivationLayout::Nhwc}) {
      model::MaskRCNN graphed = makeModel(layout, 21), eager = makeModel(layout, 21);
      graphed->train();
      eager->train();
      runtime::DenseGraphsRequest request;
      request.wanted = true;
      request.recorder = std::make_unique<runtime::EagerRecorder>();
      request.options.warmup_runs = 1;
      std::vector<std::string> lines;
      const runtime::DenseGraphs graphs = runtime::useDenseGraphs(
          *graphed, std::move(request), [&](const std::string& l) { lines.push_back(l); });
      QVERIFY2(graphs.graphs != nullptr, graphs.status.c_str());
      QVERIFY2(graphs.status.starts_with("eager replay: on for the backbone, FPN and RPN head"),
               graphs.status.c_str());
      at::manual_seed(4);
      const at::Tensor images = torch::randn({2, 3, kHeight, kWidth});
      for (int step = 0; step < 2; ++step) {
        const model::MaskRCNNLosses la = graphed->losses(images, sizesOf(2), targetsOf(2));
        const model::MaskRCNNLosses lb = eager->losses(images, sizesOf(2), targetsOf(2));
        QCOMPARE(lossRow(la), lossRow(lb));
        la.total.backward();
        lb.total.backward();
        const std::string differs = gradientsDiffer(*graphed, *eager, 0);
        QVERIFY2(differs.empty(), differs.c_str());
        sgd(graphed->parameters());
        sgd(eager->parameters());
      }
      QCOMPARE(graphs.graphs->replays(), uint64_t{2});
      QCOMPARE(graphs.graphs->recordedShapes(), size_t{1});
      graphed->setDenseRunner({});
    }
  }

  // Inference: detect() through the runner (forward-only recordings) gives the detections the
  // model gives alone; folding again (prepareForInference) drops the runner, and unfolded
  // weights (train(true)) make it run the stages eagerly.
  void inferenceThroughTheRunnerEqualsItsOwn() {
    model::MaskRCNN graphed = makeModel(model::ActivationLayout::Nhwc, 31),
                    eager = makeModel(model::ActivationLayout::Nhwc, 31);
    graphed->prepareForInference();
    eager->prepareForInference();
    runtime::DenseGraphsRequest request;
    request.wanted = true;
    request.inference = true;
    request.recorder = std::make_unique<runtime::EagerRecorder>();
    request.options.warmup_runs = 1;
    std::vector<std::string> lines;
    const runtime::DenseGraphs graphs = runtime::useDenseGraphs(
        *graphed, std::move(request), [&](const std::string& l) { lines.push_back(l); });
    QVERIFY2(graphs.status.find("on for the backbone, FPN and RPN head of inference") !=
                 std::string::npos,
             graphs.status.c_str());
    at::manual_seed(5);
    const at::Tensor images = torch::randn({2, 3, kHeight, kWidth});
    const auto same = [&](const std::vector<model::Detections>& a,
                          const std::vector<model::Detections>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!torch::equal(a[i].boxes, b[i].boxes) || !torch::equal(a[i].scores, b[i].scores) ||
            !torch::equal(a[i].labels, b[i].labels) || !torch::equal(a[i].masks, b[i].masks))
          return false;
      return true;
    };
    for (int call = 0; call < 2; ++call)
      QVERIFY(same(graphed->detect(images, sizesOf(2)), eager->detect(images, sizesOf(2))));
    QCOMPARE(graphs.graphs->replays(), uint64_t{2});
    QCOMPARE(lines.size(), size_t{1});
    QVERIFY2(lines[0].find("recorded the dense stages' forward for inputs [2, 3, 128, 160]") !=
                 std::string::npos,
             lines[0].c_str());
    graphed->train(true);  // unfolds the batch norms
    graphed->eval();
    eager->train(true);
    eager->eval();
    QVERIFY(same(graphed->detect(images, sizesOf(2)), eager->detect(images, sizesOf(2))));
    QCOMPARE(graphs.graphs->replays(), uint64_t{2});  // the stages ran eagerly
    graphed->prepareForInference();
    eager->prepareForInference();
    QVERIFY(same(graphed->detect(images, sizesOf(2)), eager->detect(images, sizesOf(2))));
    QCOMPARE(graphs.graphs->replays(), uint64_t{2});  // the runner is gone
  }

  // Each reason the graphs are off, in the status line; the runner is then the model's own.
  void offReasonsAreGiven() {
    model::MaskRCNN net = makeModel(model::ActivationLayout::Nchw, 1);
    const auto statusOf = [&](bool wanted, const c10::Device& device, bool synced) {
      runtime::DenseGraphsRequest r;
      r.wanted = wanted;
      r.device = device;
      r.synchronised_batch_norm = synced;
      const runtime::DenseGraphs g = runtime::useDenseGraphs(*net, std::move(r), {});
      if (g.graphs) return std::string("on");
      return g.status;
    };
    QCOMPARE(statusOf(false, c10::Device(c10::kCPU), false),
             std::string("CUDA graphs: off (use_cuda_graphs is false)"));
    QCOMPARE(statusOf(true, c10::Device(c10::kCPU), false),
             std::string("CUDA graphs: off (the device is cpu; CUDA graphs record CUDA kernels "
                         "only)"));
    QVERIFY(statusOf(true, c10::Device(c10::kCPU), true).find("all-reduce their statistics") !=
            std::string::npos);
    net->train();
    const model::MaskRCNNLosses l = net->losses(torch::randn({1, 3, kHeight, kWidth}), sizesOf(1),
                                                targetsOf(1));
    QVERIFY(std::isfinite(l.total.item<double>()));
  }

  // Where a GPU is: real CUDA graphs against eager steps of the same model, fp32 and fp16
  // autocast, three SGD steps each (losses to the precision's tolerance).
  void cudaGraphsMatchEagerStepsOnGpu() {
    if (!torch::cuda::is_available()) QSKIP("no GPU visible: this check runs where a GPU is");
    const c10::Device cuda(c10::kCUDA, 0);
    for (const bool amp : {false, true}) {
      model::MaskRCNN graphed = makeModel(model::ActivationLayout::Nhwc, 9),
                      eager = makeModel(model::ActivationLayout::Nhwc, 9);
      for (auto* m : {&graphed, &eager}) {
        (*m)->to(cuda);
        (*m)->train();
      }
      runtime::DenseGraphsRequest request;
      request.wanted = true;
      request.device = cuda;
      const runtime::DenseGraphs graphs = runtime::useDenseGraphs(*graphed, std::move(request), {});
      QVERIFY2(graphs.graphs != nullptr, graphs.status.c_str());
      model::MaskRCNNTargets targets = targetsOf(2);
      model::moveToDevice(targets, cuda);
      at::manual_seed(4);
      const at::Tensor images = torch::randn({2, 3, kHeight, kWidth}).to(cuda);
      const double tolerance = amp ? 2e-2 : 1e-4;
      for (int step = 0; step < 3; ++step) {
        std::vector<double> la, lb;
        for (auto* m : {&graphed, &eager}) {
          model::MaskRCNNLosses l;
          {
            const train::AutocastScope autocast(amp, c10::kCUDA, at::kHalf);
            l = (*m)->losses(images, sizesOf(2), targets);
          }
          l.total.backward();
          (m == &graphed ? la : lb).push_back(l.total.item<double>());
          (m == &graphed ? la : lb).push_back(l.rpn_objectness.item<double>());
          (m == &graphed ? la : lb).push_back(l.mask.item<double>());
        }
        for (size_t i = 0; i < la.size(); ++i)
          QVERIFY2(std::abs(la[i] - lb[i]) <= tolerance * std::max(1.0, std::abs(lb[i])),
                   (std::to_string(step) + ": " + std::to_string(la[i]) + " vs " +
                    std::to_string(lb[i]))
                       .c_str());
        const std::string differs = gradientsDiffer(*graphed, *eager, amp ? 5e-2 : 1e-3);
        QVERIFY2(differs.empty(), differs.c_str());
        sgd(graphed->parameters());
        sgd(eager->parameters());
      }
      QCOMPARE(graphs.graphs->replays(), uint64_t{3});
      QCOMPARE(graphs.graphs->recordedShapes(), size_t{1});
      graphed->setDenseRunner({});
    }
  }

  // Where a GPU is: inference with real CUDA graphs against eager detect(), fp16 autocast.
  void cudaGraphsInferenceMatchesEagerOnGpu() {
    if (!torch::cuda::is_available()) QSKIP("no GPU visible: this check runs where a GPU is");
    const c10::Device cuda(c10::kCUDA, 0);
    model::MaskRCNN graphed = makeModel(model::ActivationLayout::Nhwc, 13),
                    eager = makeModel(model::ActivationLayout::Nhwc, 13);
    for (auto* m : {&graphed, &eager}) {
      (*m)->to(cuda);
      (*m)->prepareForInference();
    }
    runtime::DenseGraphsRequest request;
    request.wanted = true;
    request.device = cuda;
    request.inference = true;
    const runtime::DenseGraphs graphs = runtime::useDenseGraphs(*graphed, std::move(request), {});
    QVERIFY2(graphs.graphs != nullptr, graphs.status.c_str());
    at::manual_seed(6);
    for (int call = 0; call < 3; ++call) {
      const at::Tensor images = torch::randn({1, 3, kHeight, kWidth}).to(cuda);
      const train::AutocastScope autocast(true, c10::kCUDA, at::kHalf);
      const std::vector<model::Detections> a = graphed->detect(images, sizesOf(1));
      const std::vector<model::Detections> b = eager->detect(images, sizesOf(1));
      QCOMPARE(a.size(), b.size());
      QCOMPARE(a[0].boxes.size(0), b[0].boxes.size(0));
      if (b[0].boxes.size(0) > 0) {
        QVERIFY(relError(a[0].boxes.cpu(), b[0].boxes.cpu()) < 1e-2);
        QVERIFY(relError(a[0].scores.cpu(), b[0].scores.cpu()) < 1e-2);
      }
    }
    QCOMPARE(graphs.graphs->replays(), uint64_t{3});
  }
};

QTEST_GUILESS_MAIN(TestCudaGraphs)
#include "test_cuda_graphs.moc"
