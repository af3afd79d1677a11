#!/usr/bin/env bash
# The study workflow's wall time on a generated study, locally and through Snakemake's Slurm
# executor on a one-node cluster on the same machine (issue 25's benchmark).
#
#   docs/scripts/bench_workflow.sh target/release/ede 100 docs/bench-workflow.json
#
# The study: N recordings made by `ede blinks simulate` from the EEGLAB sample (32 EEG + 2 EOG
# channels, 238 s at 128 Hz; seed k for recording k), two groups in participants.tsv. Every
# analysis the workflow runs by default (Hermite fits are skipped: no ECG channel). Each job gets
# one thread, so that the 2-core machine runs two at a time both ways. The per-job overhead is
# the wall time beyond the jobs' own (Snakemake's benchmark files) over the concurrent slots.
set -euo pipefail
ede=$(realpath "$1")
n=${2:-100}
out_json=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
sample=${EDE_DATA:-$root/../shared/data}/eeg/eeglab_sample_32ch_128hz.edf
[ -f "$sample" ] || { echo "needs $sample" >&2; exit 1; }
snakemake=$root/.venv/bin/snakemake
work=$(mktemp -d)
trap 'workflow/slurm/one-node.sh stop "$work/slurm" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
cd "$root"

study=$work/study
mkdir -p "$study"
echo '{"Name": "generated", "BIDSVersion": "1.9.0"}' > "$study/dataset_description.json"
printf 'participant_id\tgroup\n' > "$study/participants.tsv"
for k in $(seq -w 1 "$n"); do
  mkdir -p "$study/sub-$k/eeg"
  "$ede" blinks simulate "$sample" --seed "$((10#$k))" --rate 15 --amplitude 100 \
    --out "$study/sub-$k/eeg/sub-${k}_task-rest_eeg.edf" --truth "$work/truth-$k.json" 2>/dev/null
  printf 'sub-%s\t%s\n' "$k" "$([ $((10#$k % 2)) = 0 ] && echo control || echo patient)" >> "$study/participants.tsv"
done

threads=(--set-threads xapen=1 bandpower=1 hermite=1 deblink=1)
run() { # name, extra snakemake args...
  local name=$1; shift
  mkdir -p "$work/$name-work"
  local t0 t1
  t0=$(date +%s.%N)
  "$snakemake" -s workflow/Snakefile --directory "$work/$name-work" "${threads[@]}" "$@" \
    --config bids_dir="$study" output_dir="$work/$name" ede="$ede" backend=cpu > "$work/$name.log" 2>&1
  t1=$(date +%s.%N)
  echo "$t0 $t1"
}
read -r l0 l1 < <(run local --cores 2)
workflow/slurm/one-node.sh start "$work/slurm" > /dev/null
read -r s0 s1 < <(SLURM_CONF=$work/slurm/slurm.conf PATH=$work/slurm/bin:$PATH run slurm \
  --executor slurm --jobs 8 --slurm-no-account --slurm-status-command squeue \
  --slurm-init-seconds-before-status-checks 1)
workflow/slurm/one-node.sh stop "$work/slurm"
same=$(for t in xapen bandpower blinks failures; do cmp -s "$work/local/group/$t.csv" "$work/slurm/group/$t.csv" || echo "$t"; done)

python3 - "$work" "$n" "$l0" "$l1" "$s0" "$s1" "$out_json" "$same" <<'PY'
import csv, glob, json, os, sys
work, n, l0, l1, s0, s1, out, differ = sys.argv[1:9]
def jobs(name):
    rows = []
    for f in glob.glob(os.path.join(work, name, "benchmarks", "*", "*.tsv")):
        with open(f) as fh:
            r = list(csv.DictReader(fh, delimiter="\t"))
            rows.append(float(r[0]["s"]))
    return rows
def summary(name, t0, t1, slots):
    j = jobs(name)
    wall = float(t1) - float(t0)
    return {"wall_s": round(wall, 2), "jobs": len(j), "job_s_sum": round(sum(j), 2),
            "job_s_mean": round(sum(j) / len(j), 3), "slots": slots,
            "overhead_per_job_s": round((wall * slots - sum(j)) / len(j), 3)}
report = {"recordings": int(n), "machine": f"{os.cpu_count()} CPUs",
          "local": summary("local", l0, l1, 2), "slurm_one_node": summary("slurm", s0, s1, 2),
          "group_tables_differ": differ.split()}
json.dump(report, open(out, "w"), indent=2)
print(json.dumps(report, indent=2))
PY
