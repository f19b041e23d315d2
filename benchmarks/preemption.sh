#!/bin/bash
# Pre-empt a `make` training target as a cluster scheduler does, then run it again: SIGTERM to the process group when
# the run's CSV log reaches STEP, SIGKILL 15 s later, then `make TARGET` again (which resumes from last.ckpt).
# Compare what the second run prints with an uninterrupted run's figures (docs/reproducibility.md).
#
#   bash benchmarks/preemption.sh train-geometry runs/geometry/tiny 469      # from a fresh run folder
set -u
TARGET=${1:?make target, e.g. train-geometry}
RUN=${2:?run folder, e.g. runs/geometry/tiny}
STEP=${3:?the logged step at which to send SIGTERM}
LOGS=${TMPDIR:-/tmp}
setsid make "$TARGET" > "$LOGS/preempted_first.log" 2>&1 &
PID=$!
sleep 5
PGID=$(ps -o pgid= "$PID" | tr -d ' ')
while kill -0 "$PID" 2>/dev/null; do
  log=$(ls -t "$RUN"/logs/*/metrics.csv 2>/dev/null | head -1)
  if [ -n "$log" ]; then
    last=$(awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "step") c = i; next} ($c + 0) > m {m = $c + 0} END {print m + 0}' "$log")
    if [ "$last" -ge "$STEP" ]; then break; fi
  fi
  sleep 2
done
echo "SIGTERM to process group $PGID at logged step ${last:-?}: $(date -u)"
kill -TERM -"$PGID"
sleep 15
kill -KILL -"$PGID" 2>/dev/null && echo "SIGKILL sent"
wait "$PID"; echo "first run exited $?"
make "$TARGET" > "$LOGS/preempted_second.log" 2>&1
echo "second run exited $? (its output: $LOGS/preempted_second.log)"
