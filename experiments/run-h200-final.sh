#!/usr/bin/env bash
# Third pass, on a two-GPU H200 host: the fault and bad-input sweep, the
# frontier, the PyTorch SDPA reference, the hybrid dispatch of the
# multiwarp experiment, and the slice spread over both GPUs (--devices).
#   bash experiments/run-h200-final.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/h200}
work=$(mktemp -d)
mkdir -p "$out" "$work/logs"
k=./bin/ktune
export XDG_CACHE_HOME=$work/cache
run() { # name, then the sweep arguments
  local name=$1; shift
  local t0=$(date +%s)
  $k sweep "$@" -o "$work/$name" 2>&1 | tee "$work/logs/$name.txt" | grep -v '^\[' | tail -n "${TAILN:-40}"
  echo "$name: $(( $(date +%s) - t0 )) s" | tee -a "$work/logs/wall.txt"
  cp "$work/$name/results.jsonl" "$out/$name.jsonl"
  cp -r "$work/$name/sass" "$work/logs/sass-$name" 2>/dev/null
}
$k doctor --device 0 2>&1 | tee "$work/logs/doctor.txt" | tail -n 4
nvidia-smi -L | tee -a "$work/logs/doctor.txt"
TAILN=30 run faults experiments/faults.yaml
TAILN=110 run h200-frontier experiments/h200-frontier.yaml
TAILN=12 run multiwarp-hybrid experiments/multiwarp.yaml --only variant=hybrid
TAILN=8 run slice-2gpu experiments/slice.yaml --devices 0,1
python3 experiments/sdpa_ref.py -o "$out/sdpa.jsonl" --spec h200-frontier \
  --nkv 1,512,2048,8192,32768,131072 --batch 1,16 --backends cudnn,flash --probes cold,graph \
  2>&1 | tee "$work/logs/sdpa.txt" | grep -v Warning | tail -n 30
tar -C "$work" -czf "$out/logs3.tgz" logs
ls -la "$out"
