#!/usr/bin/env bash
# scripts/gpu_check.sh where no CUDA device is visible (CUDA_VISIBLE_DEVICES empty, so also
# on a machine with a GPU): exit 0, "no CUDA device" on the terminal, summary.json with status
# no_cuda_device, the prerequisites step alone and no measurement, and nothing else in --out.
# Then the failures it must report: a Python without torch (exit 2, missing_prerequisites)
# and an unknown argument (exit 2).
set -u
dir="$1"
script="$MRCNN_SOURCE_DIR/scripts/gpu_check.sh"
fails=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }

rm -rf "$dir" && mkdir -p "$dir"
text="$(CUDA_VISIBLE_DEVICES= "$script" --out "$dir/out" --python "$MRCNN_PYTHON" 2>&1)"
rc=$?
echo "$text"
check "dry run exits 0" '[ $rc -eq 0 ]'
check "dry run says no CUDA device" 'grep -q "no CUDA device" <<< "$text"'
check "only summary.json in --out" '[ "$(ls "$dir/out")" = "summary.json" ]'
check "summary: status no_cuda_device, prerequisites alone, nothing measured" \
  '"$MRCNN_PYTHON" - "$dir/out/summary.json" <<PYEOF
import json, sys
s = json.load(open(sys.argv[1]))
assert s["status"] == "no_cuda_device", s["status"]
assert [x["step"] for x in s["steps"]] == ["prerequisites"], s["steps"]
assert s["steps"][0]["status"] == "skipped", s["steps"][0]
assert s["machine"]["cuda_devices"] == 0 and s["machine"]["torch"], s["machine"]
assert not set(s) & {"ops", "train_fp16", "train_bf16", "bench"}, sorted(s)
PYEOF'

text="$("$script" --out "$dir/nopython" --python /nonexistent/python3 2>&1)"
rc=$?
check "a Python without torch: exit 2" '[ $rc -eq 2 ]'
check "a Python without torch: named" 'grep -q "python with torch (/nonexistent/python3" <<< "$text"'
check "a Python without torch: summary says missing_prerequisites" \
  'grep -q "\"status\": *\"missing_prerequisites\"" "$dir/nopython/summary.json"'

text="$("$script" --frobnicate 2>&1)"
rc=$?
check "an unknown argument: exit 2, named" '[ $rc -eq 2 ] && grep -q "frobnicate" <<< "$text"'
exit $((fails > 0))
