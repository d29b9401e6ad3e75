#include "engine/export/deepstream_config.h"

#include <sstream>

namespace mrcnn::exporter {

std::string deepStreamConfig(const OnnxExportOptions& options, size_t num_labels,
                             int64_t mask_resolution) {
  const dataset::ResizeSpec& r = options.resize;
  const bool fixed = r.mode == dataset::ResizeMode::kFixed;
  std::ostringstream s;
  s << "# nvinfer configuration for model.onnx, written by mrcnn-workbench's export.\n"
       "# The model takes RGB in 0..1 of any size ([3, height, width]) and resizes, normalises\n"
       "# and pads inside; it returns boxes [N, 4] (xyxy, input pixels), labels [N] (category\n"
       "# ids), scores [N] and masks [N, 1, "
    << mask_resolution << ", " << mask_resolution
    << "] (probabilities over each box).\n"
       "# nvinfer has no parser for these four outputs: set parse-bbox-instance-mask-func-name\n"
       "# and custom-lib-path to a parser built for them. Not tried here (no DeepStream).\n"
       "[property]\n"
       "gpu-id=0\n"
       "onnx-file=model.onnx\n"
       "model-engine-file=model.onnx_b1_gpu0_fp16.engine\n"
       "labelfile-path=labels.txt\n"
       "# RGB scaled to 0..1: y = net-scale-factor * (x - offsets)\n"
       "net-scale-factor=0.00392156862745098\n"
       "offsets=0;0;0\n"
       "model-color-format=0\n"
       "# The frame is scaled to these dimensions (aspect kept) before the model's own resize.\n"
       "infer-dims=3;"
    << (fixed ? r.canvas_height : r.min_size) << ";" << (fixed ? r.canvas_width : r.max_size)
    << "\n"
       "maintain-aspect-ratio=1\n"
       "batch-size=1\n"
       "# 0 FP32, 2 FP16\n"
       "network-mode=2\n"
       "# 3: instance segmentation\n"
       "network-type=3\n"
       "num-detected-classes="
    << num_labels
    << "\n"
       "output-blob-names=boxes;labels;scores;masks\n"
       "output-instance-mask=1\n"
       "# 4: no clustering (the model runs its own NMS)\n"
       "cluster-mode=4\n"
       "interval=0\n"
       "gie-unique-id=1\n"
       "#parse-bbox-instance-mask-func-name=<a parser for boxes, labels, scores, masks>\n"
       "#custom-lib-path=<the library holding it>\n"
       "\n"
       "[class-attrs-all]\n"
       "pre-cluster-threshold=0.5\n";
  return s.str();
}

}  // namespace mrcnn::exporter
