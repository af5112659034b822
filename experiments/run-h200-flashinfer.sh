#!/usr/bin/env bash
# FlashInfer's paged decode through ktune on one GPU in one call:
# ktune check builds its kernels with FlashInfer's own nvcc command (a
# newer CCCL first on the include path), then a sweep of
# experiments/engines/h200-flashinfer.yaml gates and times them.
#   FLASHINFER_ROOT=... CCCL_ROOT=... bash experiments/run-h200-flashinfer.sh OUTDIR
# KTUNE names the binary (default ./bin/ktune); ONLY narrows the sweep
# (a --only expression). --blocks-per-sm 12: the merge kernel's grid is
# sized from its occupancy, 12 blocks per SM on sm_90. Writes
# OUTDIR/h200-flashinfer.jsonl, check.log and sweep.log.gz.
set -uo pipefail
out=${1:?usage: run-h200-flashinfer.sh OUTDIR}
k=${KTUNE:-./bin/ktune}
spec=experiments/engines/h200-flashinfer.yaml
mkdir -p "$out"
work=${WORK:-$(mktemp -d)}   # WORK: a fixed folder, so a second call resumes the sweep
"$k" check "$spec" > "$out/check.log" 2>&1
echo "check: exit $?"
only=()
[ -n "${ONLY:-}" ] && only=(--only "$ONLY")
# END (seconds since the epoch): stop the sweep then instead of after SWEEP_S.
secs=${SWEEP_S:-420}
[ -n "${END:-}" ] && secs=$(( END - $(date +%s) ))
timeout --signal=INT "$secs" "$k" sweep "$spec" --blocks-per-sm 12 "${only[@]}" -o "$work/fi" -v > "$work/sweep.log" 2>&1
tail -n 3 "$work/sweep.log"
cp "$work/fi/results.jsonl" "$out/h200-flashinfer.jsonl"
gzip -c "$work/sweep.log" > "$out/sweep.log.gz"
