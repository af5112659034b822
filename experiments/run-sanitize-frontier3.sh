#!/usr/bin/env bash
# compute-sanitizer over one point per compiled kernel of h200-frontier3
# (396 kernels at nkv 2048: 198 at batch 1, 198 at batch 16), on a GPU
# machine with a prebuilt bin/ktune, all four tools:
#   TOTAL_S=500 bash experiments/run-sanitize-frontier3.sh OUTDIR [1|16 ...]
# One run-sanitize-all.sh job per shape, batch 1 first (the default is
# both batches; name one to run only its shapes), JOBS=8 jobs of
# SAN_JOBS=2 sanitized workers each, so that sixteen share the GPU and
# the host's sixteen cores. The runs committed in
# experiments/results/h200/verdicts/ are kept (KEPT): their kernels do not
# run again, and a stopped call resumes when run again into OUTDIR.
# On the H200, with the workspace filled on the device, a batch-1 kernel
# took about a minute of one worker over the four tools, a batch-16 one
# several (memcheck alone about a minute, initcheck and racecheck two);
# see NOTES-gates.md. Every kernel of both batches is committed under all
# four tools, so with the default KEPT the sanitizer runs only what a
# changed spec or kernel makes new. The sixteen workers keep
# one GPU at 100%, so for a batch-16 run on an eight-GPU machine (128
# cores), GPUS=8 ONE_QUEUE=1 JOBS=1 SAN_JOBS=64 ... OUTDIR 16 (one queue,
# its workers over the eight in turn). Sixteen 8b batch-16 workers under initcheck
# and racecheck at once fill an H200's memory: a worker the device then
# refuses leaves the pool (sweep/sanitize.go), but fewer from the start,
# SAN_JOBS=12, waste no tries. Each job takes the tools in TOOLS' order,
# every kernel under one before the next, and a run a call stops is lost,
# so the cheapest go first: at batch 16 with sixteen workers, synccheck
# took 9-12 s a run, memcheck about a minute, racecheck 28-151 s and
# initcheck 73-477 s. Jobs of a shape each leave workers idle once their
# shape is done while another's runs wait; ONE_QUEUE=1 makes each batch
# one job whose SAN_JOBS workers share one queue, the way for one GPU
# when the shapes' rests differ (ONE_QUEUE=1 JOBS=1 SAN_JOBS=12 ... 16).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-sanitize-frontier3.sh OUTDIR [1|16 ...]}
shift
batches=("$@")
[ ${#batches[@]} -eq 0 ] && batches=(1 16)
spec=experiments/h200-frontier3.yaml
v=experiments/results/h200/verdicts
jobs=()
for b in "${batches[@]}"; do
  shapes=$(grep -oE "name: [a-z0-9]+-[a-z0-9]+-b$b(-[a-z0-9]+)?," "$spec" | sed 's/name: //; s/,//')
  if [ -n "${ONE_QUEUE:-}" ]; then
    jobs+=("h200-frontier3:shape=$(echo $shapes | tr ' ' '|'),nkv=2048")
    continue
  fi
  for s in $shapes; do
    jobs+=("h200-frontier3:shape=$s,nkv=2048")
  done
done
export KEPT="${KEPT:-$v/sanitize-frontier3/verdicts.jsonl $v/sanitize-frontier3-b16/verdicts.jsonl $v/sanitize-r3/verdicts-frontier3.jsonl $v/sanitize-frontier2/verdicts.jsonl}"
TOOLS=${TOOLS:-synccheck,memcheck,racecheck,initcheck} JOBS=${JOBS:-8} SAN_JOBS=${SAN_JOBS:-2} \
  TOTAL_S=${TOTAL_S:-500} bash experiments/run-sanitize-all.sh "$out" "${jobs[@]}"
