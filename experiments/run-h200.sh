#!/usr/bin/env bash
# Produces everything under experiments/results/h200/ in one pass on an H200
# (or any NVIDIA box): doctor, the slice and the four seed experiments, the
# frontier, a second run of one point for the run-to-run spread, and an
# independent timing of that point by Nsight Compute. Writes into OUTDIR
# (default ./out/h200): one JSONL per spec, ncu.csv, and logs.tgz.
#
#   bash experiments/run-h200.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/h200}
work=$(mktemp -d)
mkdir -p "$out" "$work/logs"
k=./bin/ktune
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$work/cache}  # empty cache: every kernel compiles once

$k doctor 2>&1 | tee "$work/logs/doctor.txt"
start=$(date +%s)
for s in ${SPECS:-slice splits window staging multiwarp h200-frontier}; do
  t0=$(date +%s)
  $k sweep "experiments/$s.yaml" -o "$work/$s" 2>&1 | tee "$work/logs/$s.txt" | tail -n 3
  echo "$s: $(( $(date +%s) - t0 )) s" | tee -a "$work/logs/wall.txt"
  cp "$work/$s/results.jsonl" "$out/$s.jsonl"
  cp -r "$work/$s/sass" "$work/logs/sass-$s" 2>/dev/null
done
echo "all sweeps: $(( $(date +%s) - start )) s" | tee -a "$work/logs/wall.txt"

# Run-to-run spread: the same point again, in a separate process.
pt='variant=d2,SPLITS=32,nkv=32768'
$k sweep experiments/slice.yaml -o "$work/rerun" --only "$pt" --force 2>&1 | tail -n 2
cp "$work/rerun/results.jsonl" "$out/rerun.jsonl"

# An independent instrument: ncu times each kernel with caches flushed
# before it (--cache-control all) and the clocks left alone.
ncu=/usr/local/cuda/bin/ncu
if [ -x "$ncu" ]; then
  $ncu --clock-control none --cache-control all --metrics gpu__time_duration.sum \
    -k regex:attn_ --csv --log-file "$work/logs/ncu.log" \
    $k sweep experiments/slice.yaml -o "$work/ncu" --only "$pt" --force --no-gates --probes cold \
    > "$out/ncu.csv" 2> "$work/logs/ncu-stderr.txt"
  cp "$work/ncu/results.jsonl" "$out/ncu-run.jsonl" 2>/dev/null
fi
tar -C "$work" -czf "$out/logs.tgz" logs
ls -la "$out"
