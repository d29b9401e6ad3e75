#!/usr/bin/env bash
# A stand-in for mrcnn-engine in the run monitor's tests: prints event lines the way the
# engine does and ends the way the test asks (FAKE_ENGINE_MODE), so that the monitor's
# handling of crashes, kills and graceful stops is tested without training anything.
#   crash   a few progress events, an error event, exit 1
#   killed  a few progress events, a line on stderr, then SIGKILL to itself
#   silent  progress events, then exit 0 without a done event
#   cut     progress events, half of one more line (no newline), then killed by SIGKILL
#   stop    progress events, then waits; SIGINT or SIGTERM → done stopped, exit 0
#   burst   FAKE_ENGINE_LINES progress events as fast as it can, each line written on its
#           own (many small reads for the monitor), then done ok
# It records its arguments in $FAKE_ENGINE_ARGS (a file) when set.
set -u
mode="${FAKE_ENGINE_MODE:-crash}"
[[ -n "${FAKE_ENGINE_ARGS:-}" ]] && printf '%s\n' "$*" >> "$FAKE_ENGINE_ARGS"

start_step=0
prev=""
for a in "$@"; do
  [[ "$prev" == "--run-dir" && -f "$a/stopped_at" ]] && start_step=$(cat "$a/stopped_at")
  [[ "$prev" == "--run-dir" ]] && run_dir="$a"
  prev="$a"
done

event() { printf '%s\n' "$1"; }
progress() {  # step
  local s=$1
  event "{\"v\":1,\"type\":\"progress\",\"time\":$((1763776000 + s)),\"step\":$s,\"lr\":0.01,\"losses\":{\"total\":$(awk "BEGIN{print 2.0/($s+1)}"),\"mask\":0.5},\"imagesPerSecond\":4}"
}

event "{\"v\":1,\"type\":\"start\",\"time\":1763776000,\"task\":\"train\",\"device\":\"cpu\",\"totalSteps\":100,\"startStep\":$start_step}"
case "$mode" in
  crash)
    for s in 1 2 3; do progress $s; done
    echo "loading the checkpoint" >&2
    event '{"v":1,"type":"error","time":1763776004,"code":"nan_loss","message":"the loss became NaN at step 3","exitCode":1}'
    exit 1
    ;;
  killed)
    for s in 1 2; do progress $s; done
    echo "about to run out of memory" >&2
    kill -KILL $$
    ;;
  silent)
    for s in 1 2; do progress $s; done
    exit 0
    ;;
  cut)
    for s in 1 2; do progress $s; done
    printf '%s' '{"v":1,"type":"progress","time":1763776003,"st'
    kill -KILL $$
    ;;
  stop)
    step=$start_step
    stopping=0
    signal=""
    trap 'stopping=1; signal=SIGINT' INT
    trap 'stopping=1; signal=SIGTERM' TERM
    while (( stopping == 0 )); do
      step=$((step + 1))
      progress $step
      sleep 0.05 & wait $!
    done
    [[ -n "${run_dir:-}" ]] && echo "$step" > "$run_dir/stopped_at"
    event "{\"v\":1,\"type\":\"checkpoint\",\"time\":1763776100,\"step\":$step,\"path\":\"checkpoints/model.step-$step.pt\"}"
    event "{\"v\":1,\"type\":\"done\",\"time\":1763776100,\"status\":\"stopped\",\"summary\":\"stopped at step $step by $signal\"}"
    exit 0
    ;;
  burst)
    n="${FAKE_ENGINE_LINES:-10000}"
    awk -v n="$n" 'BEGIN { for (s = 1; s <= n; ++s)
      printf "{\"v\":1,\"type\":\"progress\",\"time\":%d,\"step\":%d,\"lr\":0.01,\"losses\":{\"total\":%.6f}}\n", 1763776000 + s, s, 2.0 / s; fflush() }'
    event '{"v":1,"type":"done","time":1763786000,"status":"ok","summary":"burst done"}'
    exit 0
    ;;
esac
