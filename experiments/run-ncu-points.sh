#!/usr/bin/env bash
# Nsight Compute on single points of a spec, one attn_partial launch each
# (the third of its run, the same index in every run, caches flushed,
# clocks as the card has them), for a diagnosis that compares forms:
#   bash experiments/run-ncu-points.sh OUTDIR SPEC NAME=ONLY [NAME=ONLY ...]
# e.g. q1='shape=8b-f16-b16,variant=b16-f1-pf,nkv=32768'. Writes, per
# point, OUTDIR/NAME.ncu-rep (the report), ncu-NAME.csv (its details
# page), raw-NAME.csv (every metric collected: the stall reasons per
# issued instruction among them) and sass-NAME.csv (the source page:
# per SASS instruction, its warp-state samples), and OUTDIR/ncu-summary.txt,
# the metrics the diagnoses read, one column per point.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-ncu-points.sh OUTDIR SPEC NAME=ONLY ...}
spec=${2:?SPEC}
shift 2
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
names=()
for arg in "$@"; do
  name=${arg%%=*}
  only=${arg#*=}
  names+=("$name")
  ncu --clock-control none --cache-control all --kernel-name regex:attn_partial --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section ComputeWorkloadAnalysis --section InstructionStats --section Occupancy --section LaunchStats \
    --section SourceCounters --import-source no -f -o "$out/$name" \
    ./bin/ktune sweep "$spec" --only "$only" --in-process --no-gates --probes cold --force \
    -o "$out/w-$name" > "$out/ncu-$name.log" 2>&1 || echo "$name: ncu exit $?"
  ncu -i "$out/$name.ncu-rep" --csv --page details > "$out/ncu-$name.csv" 2>> "$out/ncu-$name.log"
  ncu -i "$out/$name.ncu-rep" --csv --page raw > "$out/raw-$name.csv" 2>> "$out/ncu-$name.log"
  ncu -i "$out/$name.ncu-rep" --csv --page source --print-source sass > "$out/sass-$name.csv" 2>> "$out/ncu-$name.log"
done
python3 - "$out" "${names[@]}" > "$out/ncu-summary.txt" <<'PY'
import csv, sys
out, names = sys.argv[1], sys.argv[2:]
want = ["Duration", "DRAM Throughput", "Memory Throughput", "Compute (SM) Throughput", "Registers Per Thread",
        "Achieved Occupancy", "Issue Slots Busy", "Issued Warp Per Scheduler", "No Eligible",
        "Warp Cycles Per Issued Instruction", "Executed Instructions", "L1/TEX Hit Rate", "L2 Hit Rate",
        "Eligible Warps Per Scheduler", "Active Warps Per Scheduler"]
cols = {}
for n in names:
    vals = {}
    try:
        lines = [l for l in open(f"{out}/ncu-{n}.csv") if l.startswith('"')]
        for row in csv.DictReader(lines):
            m = row.get("Metric Name", "")
            if m in want and m not in vals:
                vals[m] = f'{row.get("Metric Value", "")} {row.get("Metric Unit", "")}'.strip()
    except OSError as e:
        vals["error"] = str(e)
    cols[n] = vals
print("metric".ljust(36) + "".join(n[:22].ljust(24) for n in names))
for m in want:
    print(m[:35].ljust(36) + "".join(cols[n].get(m, "-")[:22].ljust(24) for n in names))
# The stall reasons, cycles per issued instruction, from the raw page.
raw = {}
for n in names:
    try:
        rows = list(csv.reader(open(f"{out}/raw-{n}.csv")))
        head = next(i for i, r in enumerate(rows) if "ID" in r[:1])
        raw[n] = dict(zip(rows[head], rows[head + 2])) if len(rows) > head + 2 else {}
    except (OSError, StopIteration):
        raw[n] = {}
keys = sorted({k for v in raw.values() for k in v
               if k.startswith("smsp__average_warps_issue_stalled_") and k.endswith("_per_issue_active.ratio")
               or k.startswith("sm__pipe_tensor") or k.startswith("sm__inst_executed_pipe_tensor")})
print()
for k in keys:
    short = k.replace("smsp__average_warps_issue_stalled_", "stall ").replace("_per_issue_active.ratio", "")
    print(short[:35].ljust(36) + "".join(raw[n].get(k, "-")[:22].ljust(24) for n in names))
PY
cat "$out/ncu-summary.txt"
