#!/usr/bin/env bash
# Second pass on the H200: the frontier spec, the PyTorch SDPA reference at
# the same shapes and probes, and the four seed experiments again from a
# warm compile cache (to show that a re-run compiles nothing).
#   bash experiments/run-h200-frontier.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/h200}
work=$(mktemp -d)
mkdir -p "$out" "$work/logs"
k=./bin/ktune
export XDG_CACHE_HOME=$work/cache

$k sweep experiments/h200-frontier.yaml -o "$work/frontier" 2>&1 | tee "$work/logs/frontier.txt" | grep -v '^\[' | tail -n 110
cp "$work/frontier/results.jsonl" "$out/h200-frontier.jsonl"
cp -r "$work/frontier/sass" "$work/logs/sass-frontier" 2>/dev/null

python3 experiments/sdpa_ref.py -o "$out/sdpa.jsonl" --spec h200-frontier \
  --nkv 1,512,2048,8192,32768,131072 --batch 1,16 --backends cudnn,flash --probes cold,graph \
  2>&1 | tee "$work/logs/sdpa.txt" | tail -n 30

# Cold cache, then warm cache: compile counts and wall time of the four seed experiments.
for pass in cold warm; do
  t0=$(date +%s)
  for s in splits window staging multiwarp; do
    $k sweep "experiments/$s.yaml" -o "$work/$pass-$s" > "$work/logs/$pass-$s.txt" 2>&1
  done
  echo "$pass cache: four experiments in $(( $(date +%s) - t0 )) s" | tee -a "$work/logs/wall.txt"
  python3 - "$work" "$pass" <<'PY' | tee -a "$work/logs/wall.txt"
import json, sys, glob
work, p = sys.argv[1], sys.argv[2]
n = compiled = 0; secs = 0.0
for f in glob.glob(f"{work}/{p}-*/results.jsonl"):
    for line in open(f):
        r = json.loads(line); n += 1
        c = r.get("compile") or {}
        if not c.get("cached"): compiled += 1; secs += c.get("seconds", 0)
print(f"{p}: {n} records, {compiled} not from cache ({secs:.1f} s of compile time)")
PY
done
cp "$work/warm-window/results.jsonl" "$out/window.jsonl"
tar -C "$work" -czf "$out/logs2.tgz" logs
ls -la "$out"
