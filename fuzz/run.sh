#!/usr/bin/env bash
# Runs every reader's fuzz target (or those named) for a bounded time and number of executions
# and prints one line per target: executions, corpus size, exit status and what was found.
#
#   fuzz/run.sh [-n RUNS] [-t SECONDS] [-j PARALLEL] [-w TARGET=WORKERS ...] [TARGET...]
#
# Defaults: 1,000,000 executions per process, at most 3,600 s, one process per core at a time.
# -w gives a slow target several processes on one corpus (their executions add up).
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). New inputs go to the
# ignored fuzz/corpus/TARGET, crashes to fuzz/artifacts/TARGET, logs to fuzz/logs/.
# EDE_FUZZ_BIN=DIR runs binaries built before (`cargo +nightly fuzz build -s none`) from DIR, as
# on a machine without nightly. Every crash found becomes a file in tests/fixtures/fuzz/TARGET/
# (tests/fuzz_regressions.rs) and a line in docs/RELIABILITY.md.
set -euo pipefail
cd "$(dirname "$0")"
runs=1000000 seconds=3600 jobs=$(nproc)
declare -A workers=()
while getopts "n:t:j:w:" o; do
  case $o in
    n) runs=$OPTARG ;; t) seconds=$OPTARG ;; j) jobs=$OPTARG ;;
    w) workers[${OPTARG%=*}]=${OPTARG#*=} ;;
    *) sed -n 2,14p "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(edf bdf wfdb brainvision eeglab eeglab_v73 fif xdf bti csv bids nihon_kohden neuroscan
  mff egi_raw ctf persyst curry ant kit)

bin=${EDE_FUZZ_BIN:-}
if [ -z "$bin" ]; then
  # No sanitizer: the readers are safe Rust, so what the fuzzer looks for is a panic (overflow
  # checks and debug assertions are on), an endless loop or an allocation past -rss_limit_mb.
  cargo +nightly fuzz build -s none >&2
  bin=target/x86_64-unknown-linux-gnu/release
fi
rm -rf logs && mkdir -p logs
one() {
  local t=$1 i=$2
  mkdir -p "corpus/$t" "artifacts/$t"
  "$bin/$t" "corpus/$t" "seeds/$t" -runs="$runs" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=4096 -max_len=131072 -print_final_stats=1 -seed="$((RANDOM + i))" \
    -artifact_prefix="artifacts/$t/" > "logs/$t.$i.log" 2>&1
  echo $? > "logs/$t.$i.rc"
}
export -f one
export runs seconds bin
for t in "${targets[@]}"; do
  for ((i = 0; i < ${workers[$t]:-1}; i++)); do echo "$t $i"; done
done | xargs -P "$jobs" -L1 bash -c 'one $0 $1'
for t in "${targets[@]}"; do
  execs=$(cat logs/"$t".*.log | awk '/stat::number_of_executed_units/ {n += $2} END {print n + 0}')
  rcs=$(cat logs/"$t".*.rc | sort -u | tr '\n' ' ')
  printf '%-12s executions %10s  processes %s  corpus %5s  exit %s artifacts %d\n' \
    "$t" "$execs" "${workers[$t]:-1}" "$(find "corpus/$t" -type f | wc -l)" "$rcs" \
    "$(find "artifacts/$t" -type f | wc -l)"
done
