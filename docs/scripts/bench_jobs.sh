#!/bin/bash
# The study workflow's per-recording jobs, each as a whole ede process (start, GPU set-up,
# reading, analysis, writing): the best of 3 wall times, on the GPU and on the CPU. What
# docs/STUDIES.md's estimate starts from.
#
#   docs/scripts/bench_jobs.sh EDE EEGLAB_SAMPLE.edf MITDB_100_RECORD
set -u
E=$1; S=$2; R=$3; W=$(mktemp -d)
nvidia-smi -L 2>/dev/null; echo "cpus $(nproc)"
t() { # name, command...
  local name=$1; shift; local best=999
  for i in 1 2 3; do
    local s=$(date +%s.%N)
    "$@" > "$W/$name.out" 2> "$W/$name.err" || { echo "$name failed"; tail -3 "$W/$name.err"; return; }
    local e=$(date +%s.%N); best=$(python3 -c "print(round(min($best, $e - $s), 4))")
  done
  echo "$name $best s: $(tail -1 "$W/$name.err" | cut -c1-160)"
}
for b in gpu auto cpu; do
  t "xapen_$b" "$E" xapen "$S" --backend $b --out "$W/x.json"
  t "bandpower_$b" "$E" cwt "$S" --all-channels --band-power "$W/bp.csv" --block-s 30 --backend $b
  t "deblink_$b" "$E" deblink "$S" --backend $b --out "$W/c.edf" --report "$W/r.json"
  t "hermite_$b" "$E" hermite "$R" --backend $b --out "$W/h.json"
done
t blinks_measure "$E" blinks measure "$S" "$W/c.edf" --out "$W/m.json"
t info "$E" info "$S"
rm -rf "$W"
