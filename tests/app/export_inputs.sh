#!/usr/bin/env bash
# The inputs the export tests share (test_export, test_export_int8, test_tiled_inference),
# made once for the suite by ctest's export_inputs fixture, or by one test run alone:
#
#   tests/app/export_inputs.sh r50 DIR      torchvision's R50-FPN seeded (model.pt,
#                                           model_saturated.pt), the photos and the noise image
#                                           (images/), make's JSON line in make.json
#   tests/app/export_inputs.sh shapes DIR   the shapes spec trained 150 steps in DIR/shapes_run
#                                           (a model that detects the shapes a little: bbox AP
#                                           0.003-0.03, so parity and AP compare real detections)
#   tests/app/export_inputs.sh all DIR      both, in DIR emptied first (the suite's fixture)
#
# Each part ends with DIR/<part>.done; a part already done is not made again. Needs the test
# environment: MRCNN_PYTHON, MRCNN_SOURCE_DIR, MRCNN_SHARED_DIR, MRCNN_BIN_DIR.
set -euo pipefail
part="${1:?usage: export_inputs.sh r50|shapes|all DIR}"
dir="${2:?usage: export_inputs.sh r50|shapes|all DIR}"
mkdir -p "$dir"

make_r50() {
  [[ -f "$dir/r50.done" ]] && return
  "$MRCNN_PYTHON" "$MRCNN_SOURCE_DIR/tests/engine/export_parity.py" make "$dir" > "$dir/make.log"
  tail -n 1 "$dir/make.log" > "$dir/make.json"
  touch "$dir/r50.done"
}

make_shapes() {
  [[ -f "$dir/shapes.done" ]] && return
  rm -rf "$dir/shapes_run"
  "$MRCNN_BIN_DIR/mrcnn-engine" --spec "$MRCNN_SOURCE_DIR/specs/shapes_resnet18.txt" \
    --run-dir "$dir/shapes_run" --set total_steps=150 --set save_checkpoints_steps=150 \
    --set num_steps_per_eval=0 --set data_config.eval_samples=8 > "$dir/shapes_train.log" ||
    { tail -n 20 "$dir/shapes_train.log"; exit 1; }
  touch "$dir/shapes.done"
}

case "$part" in
  r50) make_r50 ;;
  shapes) make_shapes ;;
  all) rm -rf "$dir"; mkdir -p "$dir"; make_r50; make_shapes ;;
  *) echo "export_inputs.sh: unknown part $part (r50, shapes or all)" >&2; exit 2 ;;
esac
