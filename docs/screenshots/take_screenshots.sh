#!/usr/bin/env bash
# Takes the README's screenshots of mrcnn-workbench under Xvfb, with real data:
#   run_monitor.png      a shapes training run reopened from its events.jsonl
#   dataset_browser.png  tinycoco's val split with its ground truth
#   predictions.png      the engine's inference with a trained shapes checkpoint, beside the
#                        ground truth
#   spec_editor.png      the sample spec specs/shapes_resnet18.txt
#   warnings.png         dataset_convert's report on a copy of tinycoco's val split with faults
#                        planted (tinycoco itself converts without a warning)
#   dataset_statistics.png  the dataset check of the shapes train split (Statistics tab)
#   analysis.png         the evaluation of the same checkpoint on the shapes val split (the
#                        engine's evaluate task): class $ANALYSIS_CLASS (default 2, square)
#                        selected, confusion cell $ANALYSIS_CELL (default 1,2) listed
#   prune_result.png     the same checkpoint pruned by the engine's prune task at threshold
#                        $PRUNE_THRESHOLD (default 0.5, TAO's other defaults), its result dialog
#   new_experiment_report.png  File > New Experiment from Data... on LabelMe's VOC photos
#                        (labelme_voc2011/data_annotated): the import's report page
#   new_experiment_check.png   the same wizard's dataset check page
#   start_page.png       the window opened without a spec, taken last (the recent items are
#                        those the shots above opened)
#
#   docs/screenshots/take_screenshots.sh BUILD_DIR RUN_DIR [PREDICTION_RUN_DIR [CHECKPOINT]]
#
# RUN_DIR is a training run of specs/shapes_resnet18.txt (its events.jsonl is plotted; a run
# still going is followed). The predictions use PREDICTION_RUN_DIR's spec.txt (default RUN_DIR)
# and CHECKPOINT (default: that run's best, else last) on the first 8 shapes val images of
# $MRCNN_SHAPES_ROOT (default datasets/shapes, where the embedded spec generates them), shown
# from score $SCORE (default 0.3), image $IMAGE of them (default 1). $SHOTS (names, space
# separated; default all) retakes only those. Needs xvfb-run and the project's venv python; writes only to
# docs/screenshots/ and a temporary folder.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
usage="usage: take_screenshots.sh BUILD_DIR RUN_DIR [PREDICTION_RUN_DIR [CHECKPOINT]]"
build="$(cd "${1:?$usage}" && pwd)"
run="$(cd "${2:?$usage}" && pwd)"
prediction_run="$(cd "${3:-$run}" && pwd)"
checkpoint="${4:-}"
if [[ -z "$checkpoint" ]]; then
  for pointer in best last; do
    if [[ -f "$prediction_run/checkpoints/$pointer" ]]; then
      checkpoint="$(head -n1 "$prediction_run/checkpoints/$pointer")"
      [[ "$checkpoint" = /* ]] || checkpoint="$prediction_run/checkpoints/$checkpoint"
      break
    fi
  done
fi
[[ -f "$checkpoint" ]] || { echo "take_screenshots.sh: no checkpoint in $prediction_run" >&2; exit 1; }
shapes="${MRCNN_SHAPES_ROOT:-$root/datasets/shapes}"
score="${SCORE:-0.3}"
image_number="${IMAGE:-1}"
out="$root/docs/screenshots"
data="${MRCNN_SHARED_DIR:-$root/../shared}/data/tinycoco"
python="${MRCNN_PYTHON:-$root/.venv/bin/python}"
engine="$build/bin/mrcnn-engine"
app="$build/bin/mrcnn-workbench"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Settings of a fresh user (no window state, no recent items of the person running this).
export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_CACHE_HOME="$work/cache"
export MRCNN_ENGINE="$engine"
export QT_QPA_PLATFORM=xcb

wants() {  # NAME: whether this run takes that screenshot ($SHOTS empty: all)
  [[ -z "${SHOTS:-}" || " $SHOTS " == *" $1 "* ]]
}

shot() {  # NAME ARGS...: the window at 1600x1000, saved as docs/screenshots/NAME.png
  local name=$1
  shift
  wants "$name" || return 0
  xvfb-run -a -s "-screen 0 1600x1000x24" "$app" -geometry 1600x1000+0+0 \
    --screenshot "$out/$name.png" "$@"
  echo "wrote $out/$name.png"
}

# Predictions: the real engine's inference with the checkpoint on shapes val images. The
# dataset root is given because the spec as run names it relative to the spec it came from.
shapes_json="$shapes/annotations/instances_val.json"
if wants predictions; then
  mkdir -p "$work/shapes_val"
  for image in $(ls "$shapes/images/val" | head -n 8); do
    cp "$shapes/images/val/$image" "$work/shapes_val/"
  done
  "$engine" --spec "$prediction_run/spec.txt" --task inference --checkpoint "$checkpoint" \
    --set "data_config.shapes_dataset.root=$shapes" \
    --images "$work/shapes_val" --out "$work/inference" > "$work/inference.log"
fi

# Analysis: the checkpoint evaluated on the shapes val split, and its inference on the same
# images (what the confusion cells open), in a run folder of their own.
if wants analysis; then
  "$engine" --spec "$prediction_run/spec.txt" --task evaluate --checkpoint "$checkpoint" \
    --set "data_config.shapes_dataset.root=$shapes" --run-dir "$work/analysis" > "$work/evaluate.log"
  "$engine" --spec "$prediction_run/spec.txt" --task inference --checkpoint "$checkpoint" \
    --set "data_config.shapes_dataset.root=$shapes" --run-dir "$work/analysis" > "$work/analysis.log"
fi
metrics="$work/analysis/eval/$(basename "${checkpoint%.*}").json"

# Prune: the checkpoint pruned into a folder of the temporary one (the dialog's Retrain… finds
# the run from the checkpoint's path).
if wants prune_result; then
  "$engine" --spec "$prediction_run/spec.txt" --task prune --checkpoint "$checkpoint" \
    --set "data_config.shapes_dataset.root=$shapes" --output-dir "$work/pruned" \
    --pruning-threshold "${PRUNE_THRESHOLD:-0.5}" > "$work/prune.log"
fi

# Warnings: tinycoco's val split with faults planted (the ones tests/dataset/test_convert.cpp
# plants), converted by the engine.
"$python" - "$data" "$work/dirty" <<'EOF'
import json, os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(f"{dst}/images")
for name in os.listdir(f"{src}/images/val2017"):
    if name == "000000444010.jpg":
        continue  # missing
    data = open(f"{src}/images/val2017/{name}", "rb").read()
    if name == "000000565004.jpg":
        data = data[: len(data) * 6 // 10]  # truncated
    open(f"{dst}/images/{name}", "wb").write(data)
doc = json.load(open(f"{src}/annotations/instances_val2017.json"))
for a in doc["annotations"]:
    b = a["bbox"]
    if a["id"] == 671091: b[0] = 640 - b[2] / 2            # out of the image
    if a["id"] == 84596: b[2] = 0                           # zero width
    if a["id"] == 468698: a["bbox"] = [b[0] + 5, b[1] + 5, b[2] - 10, b[3] - 10]  # mask outside
    if a["id"] == 541750: a["category_id"] = 999            # unknown category
json.dump(doc, open(f"{dst}/dirty.json", "w"))
EOF
"$engine" --task dataset_convert --image-dir "$work/dirty/images" \
  --annotations "$work/dirty/dirty.json" --output-dir "$work/dirty/out" --num-shards 1 \
  > "$work/convert.log"

sample="$root/specs/shapes_resnet18.txt"
shot spec_editor "$sample" --view 1
shot run_monitor "$sample" --view 2 --run "$run"
shot dataset_browser "$sample" --view 3 --dataset "$data/annotations/instances_val2017.json" \
  --images "$data/images/val2017" --image-id 547503 --screenshot-delay 3000
shot predictions "$prediction_run/spec.txt" --view 4 --checkpoint "$checkpoint" \
  --results "$work/inference/results.json" --results-images "$work/shapes_val" \
  --ground-truth "$shapes_json" --score-threshold "$score" --result-image "$image_number" \
  --screenshot-delay 3000
# The box planted out of its image, selected.
entry="$("$python" -c 'import json, sys
problems = json.load(open(sys.argv[1]))["problems"]
print(1 + [p["kind"] for p in problems].index("box_out_of_bounds"))' "$work/dirty/out/dirty_report.json")"
shot warnings "$sample" --view 5 --warning-entry "$entry" --warnings "$work/dirty/out/dirty_report.json" \
  --warnings-annotations "$work/dirty/dirty.json" --warnings-images "$work/dirty/images" \
  --screenshot-delay 3000
shot dataset_statistics "$sample" --view 3 --dataset "$shapes/annotations/instances_train.json" \
  --images "$shapes/images/train" --dataset-statistics --screenshot-delay 3000
shot analysis "$sample" --view 6 --analysis "$metrics" --analysis-class "${ANALYSIS_CLASS:-2}" \
  --analysis-cell "${ANALYSIS_CELL:-1,2}"
shot prune_result "$sample" --view 2 --run "$prediction_run" --prune-result "$work/pruned"
# The wizard grabs itself (not the window) once stepped on to its page; each shot imports into
# a folder of its own, since the import refuses a folder that is not empty.
labelme="${MRCNN_SHARED_DIR:-$root/../shared}/data/labelme_voc2011/data_annotated"
shot new_experiment_report --new-experiment "$labelme" --experiment-folder "$work/new_report" \
  --new-experiment-page 2 --screenshot-delay 3000
shot new_experiment_check --new-experiment "$labelme" --experiment-folder "$work/new_check" \
  --new-experiment-page 3 --screenshot-delay 3000
shot start_page
