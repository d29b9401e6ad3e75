#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include <QTemporaryDir>
#include <QtTest>
#include <fstream>

#include "specs/spec.h"
#include "tests/specs/test_classes.h"

using namespace mrcnn::spec;
namespace gp = google::protobuf;

namespace {

std::filesystem::path sourceDir() {
  return qEnvironmentVariable("MRCNN_SOURCE_DIR").toStdString();
}

// A minimal valid spec that error cases extend.
const char* kValidBase =
    "total_steps: 2000\n"
    "data_config {\n"
    "  training_file_pattern: \"/data/train*\"\n"
    "}\n";

LoadedSpec load(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return loadSpecText(text, "spec.txt", "/specs", overrides);
}

QString dump(const LoadedSpec& loaded) {
  QString out;
  for (const auto& d : loaded.diagnostics)
    out += QString::fromStdString(d.format()) + "\n";
  return out;
}

// TAO MaskRCNN's spec fields (nvidia_tao_tf1/cv/mask_rcnn/proto): block, name, number, type.
struct TaoField {
  const char* block;
  const char* name;
  int number;
  gp::FieldDescriptor::Type type;
};
constexpr auto U32 = gp::FieldDescriptor::TYPE_UINT32;
constexpr auto F32 = gp::FieldDescriptor::TYPE_FLOAT;
constexpr auto STR = gp::FieldDescriptor::TYPE_STRING;
constexpr auto BOOL = gp::FieldDescriptor::TYPE_BOOL;
const TaoField kTaoFields[] = {
    {"", "skip_checkpoint_variables", 3, STR},
    {"", "train_batch_size", 5, U32},
    {"", "save_checkpoints_steps", 6, U32},
    {"", "num_steps_per_eval", 7, U32},
    {"", "momentum", 8, F32},
    {"", "l2_weight_decay", 10, F32},
    {"", "warmup_learning_rate", 11, F32},
    {"", "init_learning_rate", 12, F32},
    {"", "global_gradient_clip_ratio", 13, F32},
    {"", "total_steps", 14, U32},
    {"", "visualize_images_summary", 15, BOOL},
    {"", "checkpoint", 19, STR},
    {"", "eval_batch_size", 20, U32},
    {"", "warmup_steps", 21, U32},
    {"", "learning_rate_steps", 22, STR},
    {"", "learning_rate_decay_levels", 23, STR},
    {"", "seed", 24, U32},
    {"", "report_frequency", 25, U32},
    {"", "use_amp", 26, BOOL},
    {"", "pruned_model_path", 27, STR},
    {"", "l1_weight_decay", 28, F32},
    {"", "num_epochs", 29, U32},
    {"", "num_examples_per_epoch", 30, U32},
    {"", "logging_frequency", 31, U32},
    {"data_config", "image_size", 1, STR},
    {"data_config", "augment_input_data", 2, BOOL},
    {"data_config", "num_classes", 3, U32},
    {"data_config", "skip_crowd_during_training", 4, BOOL},
    {"data_config", "training_file_pattern", 6, STR},
    {"data_config", "validation_file_pattern", 7, STR},
    {"data_config", "val_json_file", 8, STR},
    {"data_config", "eval_samples", 9, U32},
    {"data_config", "prefetch_buffer_size", 10, U32},
    {"data_config", "shuffle_buffer_size", 11, U32},
    {"data_config", "n_workers", 12, U32},
    {"data_config", "max_num_instances", 13, U32},
    {"maskrcnn_config", "rpn_box_loss_weight", 1, F32},
    {"maskrcnn_config", "fast_rcnn_box_loss_weight", 2, F32},
    {"maskrcnn_config", "mrcnn_weight_loss_mask", 3, F32},
    {"maskrcnn_config", "freeze_bn", 4, BOOL},
    {"maskrcnn_config", "bbox_reg_weights", 5, STR},
    {"maskrcnn_config", "aspect_ratios", 6, STR},
    {"maskrcnn_config", "gt_mask_size", 7, U32},
    {"maskrcnn_config", "rpn_positive_overlap", 8, F32},
    {"maskrcnn_config", "rpn_negative_overlap", 9, F32},
    {"maskrcnn_config", "rpn_batch_size_per_im", 10, U32},
    {"maskrcnn_config", "rpn_fg_fraction", 11, F32},
    {"maskrcnn_config", "rpn_min_size", 12, F32},
    {"maskrcnn_config", "batch_size_per_im", 13, U32},
    {"maskrcnn_config", "fg_fraction", 14, F32},
    {"maskrcnn_config", "fg_thresh", 15, F32},
    {"maskrcnn_config", "bg_thresh_hi", 16, F32},
    {"maskrcnn_config", "bg_thresh_lo", 17, F32},
    {"maskrcnn_config", "fast_rcnn_mlp_head_dim", 18, U32},
    {"maskrcnn_config", "include_mask", 19, BOOL},
    {"maskrcnn_config", "mrcnn_resolution", 20, U32},
    {"maskrcnn_config", "train_rpn_pre_nms_topn", 21, U32},
    {"maskrcnn_config", "train_rpn_post_nms_topn", 22, U32},
    {"maskrcnn_config", "train_rpn_nms_threshold", 23, F32},
    {"maskrcnn_config", "test_detections_per_image", 24, U32},
    {"maskrcnn_config", "test_nms", 25, F32},
    {"maskrcnn_config", "test_rpn_pre_nms_topn", 26, U32},
    {"maskrcnn_config", "test_rpn_post_nms_topn", 27, U32},
    {"maskrcnn_config", "test_rpn_nms_thresh", 28, F32},
    {"maskrcnn_config", "min_level", 29, U32},
    {"maskrcnn_config", "max_level", 30, U32},
    {"maskrcnn_config", "num_scales", 31, U32},
    {"maskrcnn_config", "anchor_scale", 32, U32},
    {"maskrcnn_config", "arch", 33, STR},
    {"maskrcnn_config", "nlayers", 34, U32},
    {"maskrcnn_config", "freeze_blocks", 35, STR},
};

const gp::Descriptor* blockDescriptor(const std::string& block) {
  if (block.empty()) return Experiment::descriptor();
  return Experiment::descriptor()->FindFieldByName(block)->message_type();
}

// A valid, non-default value for every TAO field, in TAO's own spelling.
std::string taoValue(const TaoField& f) {
  const std::string name = f.name;
  if (name == "learning_rate_steps") return "\"[30, 60]\"";
  if (name == "learning_rate_decay_levels") return "\"[0.5, 0.25]\"";
  if (name == "image_size") return "\"(640, 768)\"";
  if (name == "bbox_reg_weights") return "\"(8., 8., 4., 4.)\"";
  if (name == "aspect_ratios") return "\"[(1.0, 1.0), (2.0, 0.5)]\"";
  if (name == "freeze_blocks") return "\"[0, 1, 2]\"";
  if (name == "arch") return "\"resnet\"";
  if (name == "nlayers") return "101";
  if (name == "min_level") return "3";
  if (name == "max_level") return "6";
  if (name == "skip_checkpoint_variables") return "\"^head\"";
  if (name == "num_classes") return "21";
  if (name == "total_steps") return "100";
  if (name == "bg_thresh_lo") return "0.1";
  if (name == "mrcnn_resolution") return "32";  // even: the mask head doubles its features
  if (name == "rpn_negative_overlap") return "0.2";
  if (name == "rpn_positive_overlap") return "0.8";
  if (name == "bg_thresh_hi") return "0.6";
  if (name == "momentum") return "0.8";
  switch (f.type) {
    case U32:
      return std::to_string(7 + f.number);
    case F32:
      return "0.0" + std::to_string(f.number % 9 + 1);
    case BOOL:
      return f.number % 2 ? "True" : "False";
    default:
      return "\"/path/" + name + "\"";
  }
}

}  // namespace

void SpecTest::taoSampleParsesUnmodified() {
  const auto path = sourceDir() / "tests/specs/data/tao_maskrcnn_sample.txt";
  const LoadedSpec loaded = loadSpecFile(path);
  QVERIFY2(loaded.ok(), qPrintable(dump(loaded)));
  QVERIFY2(loaded.diagnostics.empty(), qPrintable(dump(loaded)));
  const Experiment& s = loaded.spec;
  QCOMPARE(s.seed(), 123u);
  QCOMPARE(s.use_amp(), false);
  QCOMPARE(s.total_steps(), 120000u);
  QCOMPARE(s.l2_weight_decay(), 0.0001f);
  QCOMPARE(s.data_config().num_classes(), 91u);
  QCOMPARE(s.data_config().augment_input_data(), true);
  QCOMPARE(s.maskrcnn_config().nlayers(), 50u);
  QCOMPARE(s.maskrcnn_config().rpn_min_size(), 0.0f);
  QCOMPARE(s.maskrcnn_config().anchor_scale(), 8u);
  const Resolved& r = loaded.resolved;
  QCOMPARE(r.learning_rate_steps, (std::vector<long long>{60000, 80000, 100000}));
  QCOMPARE(r.learning_rate_decay_levels, (std::vector<double>{0.1, 0.02, 0.002}));
  QCOMPARE(r.image_height, 832);
  QCOMPARE(r.image_width, 1344);
  QCOMPARE(r.aspect_ratios.size(), std::size_t{3});
  QCOMPARE(r.aspect_ratios[2], (std::pair<double, double>{0.7, 1.4}));
  QCOMPARE(r.bbox_reg_weights, (std::array<double, 4>{10, 10, 5, 5}));
  QCOMPARE(r.freeze_blocks, (std::vector<int>{0, 1}));
}

void SpecTest::everyTaoFieldHasTaosNameNumberAndType() {
  for (const TaoField& f : kTaoFields) {
    const gp::FieldDescriptor* field = blockDescriptor(f.block)->FindFieldByName(f.name);
    QVERIFY2(field, f.name);
    QCOMPARE(field->number(), f.number);
    QVERIFY2(field->type() == f.type, f.name);
  }
}

void SpecTest::everyTaoFieldParses() {
  std::string text;
  for (const char* block : {"", "data_config", "maskrcnn_config"}) {
    if (*block) text += std::string(block) + " {\n";
    for (const TaoField& f : kTaoFields) {
      if (std::string(f.block) == block)
        text += std::string("  ") + f.name + ": " + taoValue(f) + "\n";
    }
    if (*block) text += "}\n";
  }
  const LoadedSpec loaded = load(text);
  QVERIFY2(loaded.ok(), qPrintable(dump(loaded) + QString::fromStdString(text)));
  for (const TaoField& f : kTaoFields) {
    const gp::Message* message = &loaded.spec;
    if (*f.block) {
      message = &message->GetReflection()->GetMessage(
          *message, Experiment::descriptor()->FindFieldByName(f.block));
    }
    const gp::FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(f.name);
    QVERIFY2(message->GetReflection()->HasField(*message, field), f.name);
    std::string printed;
    gp::TextFormat::PrintFieldValueToString(*message, field, -1, &printed);
    std::string expected = taoValue(f);
    if (expected == "True") expected = "true";
    if (expected == "False") expected = "false";
    QCOMPARE(QString::fromStdString(printed), QString::fromStdString(expected));
  }
  QCOMPARE(loaded.resolved.image_height, 640);
  QCOMPARE(loaded.resolved.freeze_blocks, (std::vector<int>{0, 1, 2}));
}

void SpecTest::sampleSpecsAreValid() {
  for (const char* name : {"specs/shapes_resnet18.txt", "specs/coco_resnet50.txt"}) {
    const LoadedSpec loaded = loadSpecFile(sourceDir() / name);
    QVERIFY2(loaded.ok(), qPrintable(dump(loaded)));
    QVERIFY2(loaded.warnings().empty(), qPrintable(dump(loaded)));
  }
  const LoadedSpec shapes = loadSpecFile(sourceDir() / "specs/shapes_resnet18.txt");
  QVERIFY(shapes.spec.data_config().has_shapes_dataset());
  QCOMPARE(shapes.spec.maskrcnn_config().nlayers(), 18u);
  QCOMPARE(shapes.resolved.shapes_root, (sourceDir() / "datasets/shapes").lexically_normal());
}

void SpecTest::shapesDatasetOptionsAreChecked() {
  const std::string text =
      "total_steps: 10000\n"
      "data_config {\n"
      "  num_classes: 7\n"
      "  shapes_dataset {\n"
      "    min_side: 64\n"
      "    categories: 4\n"
      "    clutter: 0.5\n"
      "    min_shape_size: 16\n"
      "  }\n"
      "}\n";
  LoadedSpec loaded = load(text);
  QVERIFY2(loaded.errors().empty(), qPrintable(dump(loaded)));
  QVERIFY2(loaded.warnings().size() == 1, qPrintable(dump(loaded)));  // num_classes 5 fits
  QCOMPARE(loaded.warnings()[0].field, std::string("data_config.num_classes"));
  QCOMPARE(loaded.warnings()[0].line, 3);
  QVERIFY(loaded.warnings()[0].message.find("num_classes 5") != std::string::npos);

  loaded = load(text, {"data_config.num_classes=5"});
  QVERIFY2(loaded.ok() && loaded.warnings().empty(), qPrintable(dump(loaded)));

  loaded = load(text, {"data_config.shapes_dataset.categories=7",
                       "data_config.shapes_dataset.clutter=-1",
                       "data_config.shapes_dataset.min_shape_size=33"});
  const QString all = dump(loaded);
  QCOMPARE(loaded.errors().size(), std::size_t{3});
  QVERIFY2(all.contains("data_config.shapes_dataset.categories: must be in 1..6"), qPrintable(all));
  QVERIFY2(all.contains("data_config.shapes_dataset.clutter: must be in 0..10"), qPrintable(all));
  QVERIFY2(all.contains("data_config.shapes_dataset.min_shape_size: must be in 4..min_side/2 (32)"),
           qPrintable(all));
}

void SpecTest::maskHeadLayersResolve() {
  LoadedSpec loaded = load(kValidBase);
  QCOMPARE(loaded.resolved.mask_head_layers, (std::vector<int64_t>{256, 256, 256, 256}));
  loaded = load(kValidBase, {"maskrcnn_config.mask_head_layers=[128, 64]"});
  QVERIFY2(loaded.ok(), qPrintable(dump(loaded)));
  QCOMPARE(loaded.resolved.mask_head_layers, (std::vector<int64_t>{128, 64}));
  for (const char* bad : {"[]", "[128, 0]", "[128, x]"}) {
    loaded = load(kValidBase, {std::string("maskrcnn_config.mask_head_layers=") + bad});
    QVERIFY2(loaded.errors().size() == 1, bad);
    QCOMPARE(loaded.errors()[0].field, std::string("maskrcnn_config.mask_head_layers"));
  }
}

void SpecTest::errorClasses_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<int>("line");
  QTest::addColumn<int>("column");
  QTest::addColumn<QString>("field");
  QTest::addColumn<QString>("message");
  const QString base = kValidBase;
  // Syntax.
  QTest::newRow("missing colon") << base + "seed 5\n"
                                 << 5 << 6 << "seed"
                                 << "Expected \":\"";
  QTest::newRow("stray brace") << base + "}\n"
                               << 5 << 1 << ""
                               << "no block is open";
  QTest::newRow("unclosed block") << base + "maskrcnn_config {\n  nlayers: 18\n"
                                  << 5 << 1 << "maskrcnn_config"
                                  << "never closed";
  QTest::newRow("duplicate") << base + "seed: 1\nseed: 2\n"
                             << 6 << 1 << "seed"
                             << "more than once";
  // Unknown fields.
  QTest::newRow("unknown top") << base + "sed: 5\n"
                               << 5 << 1 << "sed"
                               << "did you mean \"seed\"";
  QTest::newRow("unknown nested") << base + "maskrcnn_config {\n  nlayer: 18\n}\n"
                                  << 6 << 3 << "maskrcnn_config.nlayer"
                                  << "did you mean \"nlayers\"";
  QTest::newRow("misplaced") << base + "maskrcnn_config {\n  num_classes: 3\n}\n"
                             << 6 << 3 << "maskrcnn_config.num_classes"
                             << "belongs in data_config";
  // Wrong types.
  QTest::newRow("string for int") << base + "maskrcnn_config {\n  nlayers: \"50\"\n}\n"
                                  << 6 << 12 << "maskrcnn_config.nlayers"
                                  << "expected a non-negative integer";
  QTest::newRow("negative uint") << base + "seed: -3\n"
                                 << 5 << 7 << "seed"
                                 << "non-negative integer";
  QTest::newRow("bad bool") << base + "use_amp: yes\n"
                            << 5 << 10 << "use_amp"
                            << "true or false";
  QTest::newRow("word for float") << base + "momentum: high\n"
                                  << 5 << 11 << "momentum"
                                  << "a number";
  QTest::newRow("number for string") << base + "checkpoint: 5\n"
                                     << 5 << 13 << "checkpoint"
                                     << "a quoted string";
  // Semantic rules.
  QTest::newRow("decay count")
      << base + "learning_rate_steps: \"[10, 20]\"\nlearning_rate_decay_levels: \"[0.1]\"\n"
      << 6 << 1 << "learning_rate_decay_levels"
      << "one level for each step";
  QTest::newRow("size multiple") << base.left(base.size() - 2) +
                                        "  image_size: \"(800, 1344)\"\n}\n"
                                 << 4 << 3 << "data_config.image_size"
                                 << "multiples of 2^max_level = 64";
  QTest::newRow("size small") << base.left(base.size() - 2) + "  image_size: \"(64, 1344)\"\n}\n"
                              << 4 << 3 << "data_config.image_size"
                              << "at least 128";
  QTest::newRow("classes") << base.left(base.size() - 2) + "  num_classes: 1\n}\n"
                           << 4 << 3 << "data_config.num_classes"
                           << "at least 2";
  QTest::newRow("fraction") << base + "maskrcnn_config {\n  fg_fraction: 1.25\n}\n"
                            << 6 << 3 << "maskrcnn_config.fg_fraction"
                            << "between 0 and 1";
  QTest::newRow("levels") << base + "maskrcnn_config {\n  min_level: 4\n  max_level: 3\n}\n"
                          << 6 << 3 << "maskrcnn_config.min_level"
                          << "greater than max_level";
  QTest::newRow("depth") << base + "maskrcnn_config {\n  nlayers: 152\n}\n"
                         << 6 << 3 << "maskrcnn_config.nlayers"
                         << "unsupported ResNet depth 152";
  QTest::newRow("batch") << base + "train_batch_size: 0\n"
                         << 5 << 1 << "train_batch_size"
                         << "at least 1";
  QTest::newRow("no schedule") << QString("data_config {\n  training_file_pattern: \"x\"\n}\n") << 0
                               << 0 << "total_steps"
                               << "neither total_steps nor num_epochs";
  QTest::newRow("malformed steps") << base + "learning_rate_steps: \"[10, 20\"\n"
                                   << 5 << 30 << "learning_rate_steps"
                                   << "missing ']'";
  QTest::newRow("malformed ratios")
      << base + "maskrcnn_config {\n  aspect_ratios: \"[(1.0, 1.0), (2.0 0.5)]\"\n}\n"
      << 6 << 37 << "maskrcnn_config.aspect_ratios"
      << "expected ','";
  QTest::newRow("malformed weights")
      << base + "maskrcnn_config {\n  bbox_reg_weights: \"(10., 10., five, 5.)\"\n}\n"
      << 6 << 33 << "maskrcnn_config.bbox_reg_weights"
      << "expected a number";
  QTest::newRow("malformed blocks") << base + "maskrcnn_config {\n  freeze_blocks: \"[0, 9]\"\n}\n"
                                    << 6 << 3 << "maskrcnn_config.freeze_blocks"
                                    << "block 9 does not exist";
  QTest::newRow("no data") << QString("total_steps: 5\n") << 0 << 0
                           << "data_config.training_file_pattern"
                           << "no training data";
  QTest::newRow("device") << base + "device: \"gpu\"\n"
                          << 5 << 1 << "device"
                          << "auto, cpu, cuda";
  QTest::newRow("choice") << base + "amp_dtype: \"fp8\"\n"
                          << 5 << 1 << "amp_dtype"
                          << "one of fp16, bf16";
  const auto withData = [](const char* line) {
    return QString("total_steps: 2000\ndata_config {\n  training_file_pattern: \"/data/train*\"\n") +
           line + "\n}\n";
  };
  QTest::newRow("tile size") << withData("  tile_size: 16") << 4 << 3 << "data_config.tile_size"
                             << "at least 32 (0: whole images), got 16";
  QTest::newRow("tile overlap") << withData("  tile_overlap: 1.0") << 4 << 3
                                << "data_config.tile_overlap"
                                << "in [0, 1), got 1";
  QTest::newRow("tile merge") << withData("  tile_merge: \"union\"") << 4 << 3
                              << "data_config.tile_merge"
                              << "one of nmm, nms";
}

void SpecTest::errorClasses() {
  QFETCH(QString, text);
  QFETCH(int, line);
  QFETCH(int, column);
  QFETCH(QString, field);
  QFETCH(QString, message);
  const LoadedSpec loaded = load(text.toStdString());
  QVERIFY(!loaded.ok());
  const auto errors = loaded.errors();
  QVERIFY2(errors.size() == 1, qPrintable(dump(loaded)));
  const Diagnostic& d = errors.front();
  QCOMPARE(d.line, line);
  QCOMPARE(d.column, column);
  QCOMPARE(QString::fromStdString(d.field), field);
  QVERIFY2(QString::fromStdString(d.message).contains(message), qPrintable(dump(loaded)));
  QCOMPARE(QString::fromStdString(d.origin), QString("spec.txt"));
  // The printed form names the place as compilers do.
  if (line > 0) {
    QVERIFY(QString::fromStdString(d.format())
                .startsWith(QString("spec.txt:%1:%2: error: ").arg(line).arg(column)));
  }
}

void SpecTest::allErrorsReportedAtOnce() {
  const std::string text =
      "sed: 1\n"  // unknown field
      "total_steps: 100\n"
      "momentum: fast\n"  // wrong type
      "data_config {\n"
      "  training_file_pattern: \"x\"\n"
      "  image_size: \"(100, 1344)\"\n"  // semantic
      "  bogus {\n    a: 1\n  }\n"       // unknown block, skipped whole
      "}\n"
      "maskrcnn_config {\n"
      "  nlayers: 7\n"          // semantic
      "  test_nms: \"half\"\n"  // wrong type
      "}\n";
  const LoadedSpec loaded = load(text);
  const auto errors = loaded.errors();
  QVERIFY2(errors.size() == 6, qPrintable(dump(loaded)));
  const std::vector<int> lines = {1, 3, 6, 7, 12, 13};
  for (std::size_t i = 0; i < lines.size(); ++i)
    QCOMPARE(errors[i].line, lines[i]);
  // The fields after the errors were still read.
  QCOMPARE(loaded.spec.total_steps(), 100u);
  QCOMPARE(loaded.spec.data_config().training_file_pattern(), std::string("x"));
}

void SpecTest::tabColumnsAreByteColumns() {
  const LoadedSpec loaded =
      load(std::string(kValidBase) + "maskrcnn_config {\n\t\tnlayers: x\n}\n");
  const auto errors = loaded.errors();
  QVERIFY2(errors.size() == 1, qPrintable(dump(loaded)));
  QCOMPARE(errors[0].line, 6);
  QCOMPARE(errors[0].column, 12);  // two tabs, "nlayers: " then the value
}

void SpecTest::overridesApplyAndValidate() {
  LoadedSpec loaded = load(kValidBase, {"maskrcnn_config.nlayers=18", "use_amp=True",
                                        "data_config.image_size=(512, 640)",
                                        "checkpoint=/w/model.pt", "output_dir=\"out dir\""});
  QVERIFY2(loaded.ok(), qPrintable(dump(loaded)));
  QCOMPARE(loaded.spec.maskrcnn_config().nlayers(), 18u);
  QCOMPARE(loaded.spec.use_amp(), true);
  QCOMPARE(loaded.resolved.image_width, 640);
  QCOMPARE(loaded.spec.checkpoint(), std::string("/w/model.pt"));
  QCOMPARE(loaded.spec.output_dir(), std::string("out dir"));

  loaded = load(kValidBase, {"maskrcnn_config.nlayers=19", "sed=1", "seed=abc", "maskrcnn_config=1",
                             "novalue", "data_config.image_size=(512, 64O)"});
  const auto errors = loaded.errors();
  QVERIFY2(errors.size() == 6, qPrintable(dump(loaded)));
  QString all = dump(loaded);
  QVERIFY(all.contains(
      "--set maskrcnn_config.nlayers=19: error: maskrcnn_config.nlayers: unsupported"));
  QVERIFY(all.contains("--set sed=1: error: sed: unknown field \"sed\""));
  QVERIFY(all.contains("--set seed=abc: error: seed: expected a non-negative integer"));
  QVERIFY(all.contains("is a block"));
  QVERIFY(all.contains("expected path.to.field=value"));
  QVERIFY(all.contains("(character 9 of the value)"));
}

void SpecTest::overrideCanSupplyAMissingSetting() {
  const std::string text = "data_config {\n  training_file_pattern: \"x\"\n}\n";
  QVERIFY(!load(text).ok());
  QVERIFY(load(text, {"num_epochs=3"}).ok());
  // An override replaces a bad value of the file, and the file's error goes with it.
  const LoadedSpec fixed = load(std::string(kValidBase) + "maskrcnn_config {\n  nlayers: 19\n}\n",
                                {"maskrcnn_config.nlayers=34"});
  QVERIFY2(fixed.ok(), qPrintable(dump(fixed)));
}

void SpecTest::resolvedSpecListsEveryFieldAndParsesBack() {
  const LoadedSpec loaded = loadSpecFile(sourceDir() / "tests/specs/data/tao_maskrcnn_sample.txt");
  QVERIFY(loaded.ok());
  const std::string printed = printResolved(loaded.spec);
  // Every singular field of the three blocks appears, defaults marked.
  for (const gp::Descriptor* d :
       {Experiment::descriptor(), DataConfig::descriptor(), MaskRCNNConfig::descriptor()}) {
    for (int i = 0; i < d->field_count(); ++i) {
      const gp::FieldDescriptor* f = d->field(i);
      if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE) continue;
      QVERIFY2(printed.find(f->name() + ":") != std::string::npos, f->name().c_str());
    }
  }
  QVERIFY(printed.find("shuffle_buffer_size: 4096  # default") != std::string::npos);
  QVERIFY(printed.find("nlayers: 50\n") != std::string::npos);

  const LoadedSpec again = load(printed);
  QVERIFY2(again.ok(), qPrintable(dump(again)));
  Experiment a = loaded.spec, b = again.spec;
  fillDefaults(&a);
  fillDefaults(&b);
  QVERIFY(gp::util::MessageDifferencer::Equals(a, b));
}

void SpecTest::relativePathsFollowTheSpecFile() {
  const LoadedSpec loaded = loadSpecText(
      "total_steps: 1\noutput_dir: \"../runs\"\ndata_config {\n  train_image_dir: \"img\"\n"
      "  train_json_file: \"/abs/train.json\"\n}\n",
      "/work/specs/a.txt", "/work/specs");
  QVERIFY2(loaded.ok(), qPrintable(dump(loaded)));
  QCOMPARE(loaded.resolved.output_dir, std::filesystem::path("/work/runs"));
  QCOMPARE(loaded.resolved.train_image_dir, std::filesystem::path("/work/specs/img"));
  QCOMPARE(loaded.resolved.train_json_file, std::filesystem::path("/abs/train.json"));
  QCOMPARE(loaded.resolved.run_name, std::string("a"));
}

void SpecTest::specAsRunKeepsItsPathsWhenMoved() {
  // The shapes spec's paths are relative ("../datasets/shapes", "../runs"); its copy in a run
  // directory, read from another folder, must still name the same dataset and output folder.
  const LoadedSpec loaded = loadSpecFile(sourceDir() / "specs/shapes_resnet18.txt");
  QVERIFY2(loaded.ok(), qPrintable(dump(loaded)));
  Experiment as_run = loaded.spec;
  anchorPaths(&as_run, loaded.resolved.spec_dir);
  const std::string printed = printResolved(as_run);
  const LoadedSpec moved = loadSpecText(printed, "/elsewhere/run/spec.txt", "/elsewhere/run");
  QVERIFY2(moved.ok(), qPrintable(dump(moved)));
  QCOMPARE(moved.resolved.shapes_root, loaded.resolved.shapes_root);
  QCOMPARE(moved.resolved.output_dir, loaded.resolved.output_dir);
  QVERIFY(moved.resolved.shapes_root.is_absolute());

  // Defaults of present messages are anchored too; absent messages and empty paths stay so.
  Experiment partial;
  partial.mutable_data_config()->set_val_json_file("val.json");
  partial.mutable_data_config()->mutable_shapes_dataset();
  anchorPaths(&partial, "/work/specs");
  QCOMPARE(partial.data_config().val_json_file(), std::string("/work/specs/val.json"));
  QCOMPARE(partial.data_config().shapes_dataset().root(), std::string("/work/specs/datasets/shapes"));
  QCOMPARE(partial.output_dir(), std::string("/work/specs/runs"));
  QVERIFY(!partial.has_checkpoint());
  QVERIFY(!partial.data_config().has_train_image_dir());
}

void SpecTest::weightsNamesAreNotPaths() {
  // checkpoint: "torchvision:resnet50" names published weights (weights/catalogue.h): valid
  // without a file of that name, and kept as written in the spec as run (not made
  // "<spec dir>/torchvision:resnet50").
  const LoadedSpec loaded = load(std::string(kValidBase) + "checkpoint: \"torchvision:resnet50\"\n");
  QVERIFY2(loaded.ok(), qPrintable(dump(loaded)));
  Experiment as_run = loaded.spec;
  anchorPaths(&as_run, "/work/specs");
  QCOMPARE(as_run.checkpoint(), std::string("torchvision:resnet50"));
  // A file path beside it is still anchored.
  as_run.set_checkpoint("torchvision_resnet50.pth");
  anchorPaths(&as_run, "/work/specs");
  QCOMPARE(as_run.checkpoint(), std::string("/work/specs/torchvision_resnet50.pth"));

  const LoadedSpec empty_name = load(std::string(kValidBase) + "checkpoint: \"torchvision:\"\n");
  QVERIFY(!empty_name.ok());
  QVERIFY2(dump(empty_name).contains("checkpoint: \"torchvision:\" is not a weights name"),
           qPrintable(dump(empty_name)));
  const LoadedSpec pruned = load(std::string(kValidBase) + "pruned_model_path: \"torchvision:resnet50\"\n");
  QVERIFY(!pruned.ok());
  QVERIFY2(dump(pruned).contains("pruned_model_path: is a pruned model's file"), qPrintable(dump(pruned)));
}

void SpecTest::missingFileIsAnError() {
  const LoadedSpec loaded = loadSpecFile("/nonexistent/spec.txt");
  QVERIFY(!loaded.ok());
  QCOMPARE(QString::fromStdString(loaded.errors().at(0).format()),
           QString("/nonexistent/spec.txt: error: no such spec file"));
}

void SpecTest::taoTrackingBlocksAreAcceptedWithAWarning() {
  const LoadedSpec loaded =
      load(std::string(kValidBase) +
           "wandb_config {\n  enabled: True\n  project: \"p\"\n  tags: \"a\"\n"
           "  tags: \"b\"\n  mode: OFFLINE\n}\n");
  QVERIFY2(loaded.ok(), qPrintable(dump(loaded)));
  QString warnings;
  for (const auto& w : loaded.warnings())
    warnings += QString::fromStdString(w.format()) + "\n";
  QVERIFY2(warnings.contains("warning: wandb_config: accepted for TAO compatibility, not used"),
           qPrintable(warnings));
}
