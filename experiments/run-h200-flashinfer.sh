#!/usr/bin/env bash
# FlashInfer's paged decode through ktune on one GPU in one call:
# ktune check builds its kernels with FlashInfer's own nvcc command (a
# newer CCCL first on the include path), then a sweep of
# experiments/engines/h200-flashinfer.yaml gates and times them.
#   FLASHINFER_ROOT=... CCCL_ROOT=... bash experiments/run-h200-flashinfer.sh OUTDIR
# KTUNE names the binary (default ./bin/ktune); ONLY narrows the sweep
# (--only expressions, ';' between them: swept in that order); the
# spec's launches declare their blocks per SM (12 for the merge kernel on
# sm_90, 8 for the planned decode grid). Writes
# OUTDIR/h200-flashinfer.jsonl, check.log and sweep.log.gz; then (BENCH=1)
# flashinfer-bench.jsonl: the CUBINs ktune check built, from its build
# cache, timed by FlashInfer's own benchmark method
# (experiments/flashinfer_bench.py: CUDA events, cold L2), for ktune's
# numbers against the engine's. BENCH_ARGS narrows it (its flags).
set -uo pipefail
out=${1:?usage: run-h200-flashinfer.sh OUTDIR}
k=${KTUNE:-./bin/ktune}
spec=experiments/engines/h200-flashinfer.yaml
mkdir -p "$out"
work=${WORK:-$(mktemp -d)}   # WORK: a fixed folder, so a second call resumes the sweep
mkdir -p "$work"
"$k" check "$spec" > "$out/check.log" 2>&1
echo "check: exit $?"
# END (seconds since the epoch): stop the sweeps then instead of after SWEEP_S.
end=$(( $(date +%s) + ${SWEEP_S:-420} ))
[ -n "${END:-}" ] && end=$END
# ONLY: --only selections separated by ';', swept in that order into one
# folder (an empty one: every point not yet recorded), so the points that
# matter most run first when the time is short.
IFS=';' read -r -a sels <<< "${ONLY:-}"
case "${ONLY:-}" in ''|*';') sels+=("") ;; esac   # read drops a trailing empty field
: > "$work/sweep.log"
for sel in "${sels[@]}"; do
  secs=$(( end - $(date +%s) ))
  if [ "$secs" -le 0 ]; then echo "skipped (time limit): --only '$sel'" | tee -a "$work/sweep.log"; continue; fi
  only=()
  [ -n "$sel" ] && only=(--only "$sel")
  echo "== --only '$sel'" >> "$work/sweep.log"
  timeout --signal=INT "$secs" "$k" sweep "$spec" "${only[@]}" -o "$work/fi" -v >> "$work/sweep.log" 2>&1
  tail -n 1 "$work/sweep.log"
done
cp "$work/fi/results.jsonl" "$out/h200-flashinfer.jsonl"
gzip -c "$work/sweep.log" > "$out/sweep.log.gz"
if [ -n "${BENCH:-}" ]; then
  # FlashInfer's CUBINs from ktune's build cache (entries naming
  # attention_impl.cuh), newest first: the script takes each kernel from
  # the first CUBIN holding it, and skips those holding none (the layout
  # probes).
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/ktune
  cubins=()
  while read -r e; do
    [ -f "$(dirname "$e")/artifact.cubin" ] && cubins+=("$(dirname "$e")/artifact.cubin")
  done < <(find "$cache/builds" -name entry.json -print0 2>/dev/null | xargs -0 -r grep -l 'attention_impl.cuh' | xargs -r ls -t)
  if [ ${#cubins[@]} -eq 0 ]; then
    echo "no nvcc build of attention_impl.cuh in $cache/builds"
  else
    # shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
    timeout "${BENCH_S:-300}" python3 experiments/flashinfer_bench.py --cubin "${cubins[@]}" ${BENCH_ARGS:-} \
      -o "$out/flashinfer-bench.jsonl" > "$out/flashinfer-bench.log" 2>&1
    echo "bench: exit $?"
    tail -n 3 "$out/flashinfer-bench.log"
  fi
fi
