// Benchmark of our Mask R-CNN on the CPU: per-image inference end to end and the training
// step, in fp32 or under bfloat16 autocast. scripts/bench_mask_rcnn.py runs it beside
// torchvision's model with the same weights, image, ground truth and thread count, and
// prints the comparison; this executable measures our side only and prints one JSON line.
//
//   bench_mask_rcnn --weights MODEL.pt --image PHOTO.jpg [--targets TARGETS.pt]
//                   --mode infer|train --precision fp32|bf16 --threads N
//                   [--warmup W] [--iters N] [--stages] [--channels-last]
//
// infer: from the normalised, resized, padded batch tensor [1, 3, H, W] (readImages, not
//   timed) to detections in the original image: backbone, RPN, RoI heads (boxes, masks),
//   boxes scaled and mask probabilities pasted at the original size (toOriginalImage, float
//   probabilities as torchvision returns them). Under c10::InferenceMode, frozen batch norms
//   folded into the convolutions (prepareForInference).
// train: the five losses on the image's ground truth (TARGETS.pt: boxes, labels, masks at
//   the resized size, as torchvision's transform makes them), backward, and an SGD step
//   (momentum 0.9, weight decay 1e-4) with zero_grad, at learning rate 0 so that every
//   measured step times the same weights (scripts/bench_mask_rcnn.py says why).
// --stages adds the median time of each stage (inference: backbone, rpn, roi_heads, paste;
//   training: forward, backward, step). --channels-last feeds the batch in channels-last.
// --profile runs one more iteration under LibTorch's profiler and prints the operators with
//   the most self time (stderr).
#include <ATen/autocast_mode.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/inference/image_input.h"
#include "engine/model/mask_rcnn.h"
#include "engine/model/postprocess.h"
#include "engine/model/state_dict.h"
#include "engine/runtime/op_profile.h"

namespace {

namespace model = mrcnn::model;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string weights, image, targets;
  std::string mode = "infer";
  std::string precision = "fp32";
  int threads = 2;
  int warmup = 3;
  int iters = 10;
  bool stages = false;
  bool channels_last = false;
  bool profile = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "bench_mask_rcnn: " << problem
            << "\nusage: bench_mask_rcnn --weights MODEL.pt --image PHOTO.jpg [--targets T.pt]"
               " --mode infer|train --precision fp32|bf16 --threads N [--warmup W] [--iters N]"
               " [--stages] [--channels-last] [--profile]\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(k + " needs a value");
      return argv[++i];
    };
    const auto number = [&]() {
      const std::string v = value();
      try {
        return std::stoi(v);
      } catch (const std::exception&) {
        usage(k + ": not a number: " + v);
      }
    };
    if (k == "--weights")
      a.weights = value();
    else if (k == "--image")
      a.image = value();
    else if (k == "--targets")
      a.targets = value();
    else if (k == "--mode")
      a.mode = value();
    else if (k == "--precision")
      a.precision = value();
    else if (k == "--threads")
      a.threads = number();
    else if (k == "--warmup")
      a.warmup = number();
    else if (k == "--iters")
      a.iters = number();
    else if (k == "--stages")
      a.stages = true;
    else if (k == "--channels-last")
      a.channels_last = true;
    else if (k == "--profile")
      a.profile = true;
    else
      usage("unknown argument " + k);
  }
  if (a.weights.empty() || a.image.empty()) usage("--weights and --image are required");
  if (a.mode != "infer" && a.mode != "train") usage("--mode must be infer or train");
  if (a.mode == "train" && a.targets.empty()) usage("--mode train needs --targets");
  if (a.precision != "fp32" && a.precision != "bf16") usage("--precision must be fp32 or bf16");
  if (a.threads < 1 || a.iters < 1 || a.warmup < 0) usage("bad --threads, --iters or --warmup");
  return a;
}

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// bfloat16 autocast on the CPU for the scope, as torch.autocast("cpu", torch.bfloat16):
// the cast cache is cleared when the scope ends.
class Autocast {
 public:
  explicit Autocast(bool on) : on_(on) {
    if (!on_) return;
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCPU, true);
  }
  ~Autocast() {
    if (!on_) return;
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::clear_cache();
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool on_;
};

// One iteration under the operator profiler (engine/runtime/op_profile.h); its table goes to
// stderr at the scope's end.
class ProfileScope {
 public:
  explicit ProfileScope(bool on) : profile_(on) {}
  ~ProfileScope() {
    if (profile_.active()) std::fputs(profile_.stop(30).c_str(), stderr);
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  mrcnn::engine::OpProfile profile_;
};

// Per-stage times of the iterations, by stage name.
using StageTimes = std::map<std::string, std::vector<double>>;

std::string jsonList(const std::vector<double>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i)
    s << (i ? ", " : "") << v[i];
  s << "]";
  return s.str();
}

int run(const Args& args) {
  at::set_num_threads(args.threads);
  torch::manual_seed(0);

  model::MaskRCNN net(model::MaskRCNNOptions::torchvisionResNet50FPN(91));
  model::LoadOptions load;
  load.source = args.weights;
  net->loadTorchvisionState(model::readStateDict(args.weights), load);

  mrcnn::engine::InputOptions input;
  input.resize.mode = mrcnn::dataset::ResizeMode::kShorterSide;
  input.resize.min_size = 800;
  input.resize.max_size = 1333;
  input.pad_multiple = 32;
  const mrcnn::engine::InputBatch batch = mrcnn::engine::readImages({args.image}, input);
  if (!batch.skipped.empty()) {
    std::fprintf(stderr, "error: %s: %s\n", args.image.c_str(), batch.skipped[0].problem.c_str());
    return 1;
  }
  at::Tensor images = batch.images;
  if (args.channels_last) images = images.contiguous(at::MemoryFormat::ChannelsLast);
  const std::array<int64_t, 2> resized = batch.sizes.images[0];
  const std::array<int64_t, 2> original = {batch.inputs[0].original_height,
                                           batch.inputs[0].original_width};
  const bool bf16 = args.precision == "bf16";

  std::vector<double> times;
  StageTimes stages;
  int64_t detections = -1;
  std::string extra;

  if (args.mode == "infer") {
    net->prepareForInference();
    for (int it = 0; it < args.warmup + args.iters + (args.profile ? 1 : 0); ++it) {
      const bool measured = it >= args.warmup && it < args.warmup + args.iters;
      ProfileScope profile(it == args.warmup + args.iters);
      const auto start = Clock::now();
      {
        c10::InferenceMode inference;
        Autocast autocast(bf16);
        model::ImageDetections out;
        if (args.stages) {
          auto t = Clock::now();
          const std::vector<at::Tensor> features = net->backbone()->forward(images);
          if (measured) stages["backbone"].push_back(msSince(t));
          t = Clock::now();
          const model::RPNOutput proposals = net->rpn()->forward(features, batch.sizes);
          if (measured) stages["rpn"].push_back(msSince(t));
          t = Clock::now();
          const model::RoIHeadsOutput heads =
              net->roiHeads()->forward(features, proposals.boxes, batch.sizes);
          if (measured) stages["roi_heads"].push_back(msSince(t));
          t = Clock::now();
          out = model::toOriginalImage(heads.detections[0], resized, original, -1.0);
          if (measured) stages["paste"].push_back(msSince(t));
        } else {
          const std::vector<model::Detections> d = net->detect(images, batch.sizes);
          out = model::toOriginalImage(d[0], resized, original, -1.0);
        }
        detections = out.boxes.size(0);
      }
      if (measured) times.push_back(msSince(start));
    }
  } else {
    const model::StateDict stored = model::readStateDict(args.targets);
    std::map<std::string, at::Tensor> gt(stored.begin(), stored.end());
    for (const char* key : {"boxes", "labels", "masks"}) {
      if (!gt.count(key)) throw std::runtime_error(args.targets + ": no tensor '" + key + "'");
    }
    model::MaskRCNNTargets targets;
    targets.boxes = {gt["boxes"].to(at::kFloat)};
    targets.labels = {gt["labels"].to(at::kLong)};
    targets.masks = {gt["masks"].to(at::kByte)};
    net->train();
    std::vector<at::Tensor> trainable;
    for (const at::Tensor& p : net->parameters()) {
      if (p.requires_grad()) trainable.push_back(p);
    }
    torch::optim::SGD sgd(trainable,
                          torch::optim::SGDOptions(0.0).momentum(0.9).weight_decay(1e-4));
    double last_total = 0;
    std::vector<double> totals;
    for (int it = 0; it < args.warmup + args.iters + (args.profile ? 1 : 0); ++it) {
      const bool measured = it >= args.warmup && it < args.warmup + args.iters;
      ProfileScope profile(it == args.warmup + args.iters);
      const auto start = Clock::now();
      auto t = Clock::now();
      model::MaskRCNNLosses losses;
      {
        Autocast autocast(bf16);
        losses = net->losses(images, batch.sizes, targets);
      }
      if (measured && args.stages) stages["forward"].push_back(msSince(t));
      t = Clock::now();
      sgd.zero_grad();
      losses.total.backward();
      if (measured && args.stages) stages["backward"].push_back(msSince(t));
      t = Clock::now();
      sgd.step();
      if (measured && args.stages) stages["step"].push_back(msSince(t));
      if (measured) times.push_back(msSince(start));
      last_total = losses.total.item<double>();
      totals.push_back(last_total);
    }
    if (!std::isfinite(last_total))
      throw std::runtime_error("the training loss became " + std::to_string(last_total) +
                               "; the losses of the steps: " + jsonList(totals));
    extra = ", \"last_loss\": " + std::to_string(last_total) + ", \"losses\": " + jsonList(totals);
  }

  std::ostringstream line;
  line << "{\"side\": \"ours\", \"mode\": \"" << args.mode << "\", \"precision\": \""
       << args.precision << "\", \"threads\": " << args.threads
       << ", \"channels_last\": " << (args.channels_last ? "true" : "false") << ", \"input\": ["
       << images.size(0) << ", " << images.size(1) << ", " << images.size(2) << ", "
       << images.size(3) << "], \"median_ms\": " << median(times)
       << ", \"min_ms\": " << *std::min_element(times.begin(), times.end())
       << ", \"times_ms\": " << jsonList(times) << ", \"detections\": " << detections << extra;
  if (!stages.empty()) {
    line << ", \"stages_ms\": {";
    bool first = true;
    for (const auto& [name, v] : stages) {
      line << (first ? "" : ", ") << "\"" << name << "\": " << median(v);
      first = false;
    }
    line << "}";
  }
  line << "}";
  std::cout << line.str() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "bench_mask_rcnn: " << e.what() << "\n";
    return 1;
  }
}
