#!/usr/bin/env bash
# compute-sanitizer over one point per compiled kernel of the seed
# experiments, the frontier specs and the planted defects, on a GPU machine
# with a prebuilt bin/ktune:
#   TOOLS=memcheck,racecheck,synccheck,initcheck JOBS=3 SAN_JOBS=2 TOTAL_S=400 \
#     bash experiments/run-sanitize-all.sh OUTDIR [SPEC[:ONLY] ...]
# Each spec runs as its own sweep (--sanitize, --probes cold) at its
# smallest nkv, so every compiled kernel's first point is gated once per
# tool under the sanitizer and then timed once; JOBS sweeps share the GPU
# (the sanitized gates are not timed; the one cold sample each is not a
# result); SAN_JOBS sanitized workers at a time within each sweep
# (--sanitize-jobs). A sweep stopped by TOTAL_S (INT, then KILL 10 s
# later) keeps its finished runs in OUTDIR/w-*/sanitize/verdicts.jsonl,
# and the same command into the same OUTDIR resumes it; KEPT="FILE ..."
# seeds every job with the verdicts of earlier runs (a committed
# verdicts.jsonl), whose kernels are then not run again. GPUS=N spreads
# the jobs over devices 0..N-1 (job i on device i mod N; with JOBS=1 the
# one job's SAN_JOBS workers take the N in turn; the sanitized runs are
# mostly the host's work, so JOBS*SAN_JOBS workers want about as many
# cores). Writes
# OUTDIR/SPEC.log and .jsonl, OUTDIR/sanitize-logs.tgz (the sanitizer's
# own reports) and OUTDIR/summary.txt: per spec, its kernels, the runs
# finished per tool, how many were clean, and the line of every finding
# and of every run left undecided (its worker never gated the point, or
# the sanitizer failed, in every try: no verdict). OUTDIR/monitor.txt gets
# a line every 20 s while the jobs run (the time, the load average, the
# host's available memory, each GPU's memory used and utilization): what
# a crowded host or device looked like when a run decided nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: run-sanitize-all.sh OUTDIR [SPEC[:ONLY] ...]}
shift
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
k=./bin/ktune
tools=${TOOLS:-memcheck,racecheck,synccheck,initcheck}
jobs=("$@")
if [ ${#jobs[@]} -eq 0 ]; then
  jobs=(defects slice splits window staging multiwarp h200-frontier h200-fused
        "h200-frontier3:shape=7b-f16-b1|8b-bf16-b1,variant=b1-s33-pdl|b1-s33-pdl-pg,nkv=8192"
        "h200-frontier3:shape=8b-f16-b16|8b-bf16-b16,variant=b16-f1-pf|b16-f1-pf-pg,nkv=8192"
        "h200-frontier3:shape=7b-bf16-b16,variant=b16-s8-w4-pdl|b16-s8-w4-pdl-pg,nkv=8192"
        "h200-frontier3:shape=7b-f16-b1-q4,variant=b1-q4-s33-pdl,nkv=8192"
        "h200-frontier3:shape=8b-f16-b16-q4,variant=b16-q4g2-f1-pf,nkv=8192")
fi
# An epoch second: each job runs in a new shell, whose SECONDS start at 0.
end=$(( $(date +%s) + ${TOTAL_S:-400} ))
# A job's files are named by its spec and its place in the list.
name() { echo "$2-$1" | tr -c 'a-zA-Z0-9.\n-' _; }
one() {
  local i=${1%% *} job=${1#* } spec only first left n
  spec=${job%%:*}
  n=$(name "$i" "$spec")
  only=${job#*:}
  if [ "$only" = "$job" ]; then
    first=$(grep -m1 -A1 '^axes:' "experiments/$spec.yaml" | grep -o 'nkv: *\[[0-9]*' | grep -o '[0-9]*$')
    only="nkv=$first"
  fi
  left=$((end - $(date +%s)))
  if [ "$left" -le 10 ]; then echo "$job: not run (time limit)" > "$out/$n.log"; return; fi
  if [ -n "${KEPT:-}" ]; then
    mkdir -p "$out/w-$n/sanitize"
    # shellcheck disable=SC2086 # KEPT is a list of files
    cat $KEPT "$out/w-$n/sanitize/verdicts.jsonl" 2>/dev/null | sort -u > "$out/w-$n/sanitize/kept.tmp" &&
      mv "$out/w-$n/sanitize/kept.tmp" "$out/w-$n/sanitize/verdicts.jsonl"
  fi
  local devs=
  if [ -n "${GPUS:-}" ]; then
    # One job takes every device (its sanitized workers in turn); several
    # take one each.
    devs=$((i % GPUS))
    [ "${JOBS:-3}" = 1 ] && devs=$(seq -s, 0 $((GPUS - 1)))
  fi
  timeout -k 10 --signal=INT "$left" "$k" sweep "experiments/$spec.yaml" -o "$out/w-$n" \
    ${devs:+--devices $devs} --sanitize="$tools" --sanitize-jobs "${SAN_JOBS:-1}" --probes cold --only "$only" > "$out/$n.log" 2>&1
  echo "exit $?" >> "$out/$n.log"
  cp "$out/w-$n/results.jsonl" "$out/$n.jsonl" 2>/dev/null
}
export -f one name
monitor() {
  while true; do
    echo "$(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" \
      "host-available $(awk '/^MemAvailable:/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)" \
      "gpu $(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader 2>/dev/null | paste -sd';')"
    sleep 20
  done >> "$out/monitor.txt"
}
monitor &
mon=$!
trap 'kill $mon 2>/dev/null' EXIT
export out k tools end SAN_JOBS KEPT GPUS JOBS
for i in "${!jobs[@]}"; do echo "$i ${jobs[$i]}"; done | xargs -P "${JOBS:-3}" -I{} bash -c 'one "$@"' _ {}
kill $mon 2>/dev/null
{
  echo "tools: $tools"
  for i in "${!jobs[@]}"; do
    job=${jobs[$i]}
    n=$(name "$i" "${job%%:*}")
    # A finished run's line is "sanitize VARIANT: TOOL: TOOL: DETAIL";
    # one the time limit stopped, "sanitize VARIANT: TOOL: stopped after".
    runs=$(grep -cE '^sanitize [^ ]+: [a-z]+: [a-z]+: ' "$out/$n.log")
    clean=$(grep -cE '^sanitize [^ ]+: [a-z]+: [a-z]+: no errors' "$out/$n.log")
    stopped=$(grep -cE '^sanitize [^ ]+: [a-z]+: stopped after ' "$out/$n.log")
    # A run that decided nothing in its tries (its worker never gated the
    # point, the sanitizer failed): no verdict, not kept.
    undecided=$(grep -cE '^sanitize [^ ]+: [a-z]+: undecided after ' "$out/$n.log")
    # Kernels: the points the sweep selected (one nkv, so one point a
    # kernel); runs finished per tool, kept ones from an earlier call
    # included.
    kernels=$(grep -m1 -o '[0-9]* selected' "$out/$n.log" | grep -o '[0-9]*')
    per=$(for t in $(echo "$tools" | tr ',' ' '); do
      echo "$t $(grep -cE "^sanitize [^ ]+: $t: $t: " "$out/$n.log")"; done | paste -sd, | sed 's/,/, /g')
    echo "$job: ${kernels:-?} kernels; runs finished: $per; $runs runs, $clean clean; $undecided undecided; $stopped stopped and lost; $(tail -n 1 "$out/$n.log")"
    grep -E '^sanitize [^ ]+: [a-z]+: ([a-z]+: |undecided after )' "$out/$n.log" | grep -v 'no errors (' | sed 's/^/  /'
  done
} > "$out/summary.txt"
logs=$(cd "$out" && ls -d w-*/sanitize 2>/dev/null)
# shellcheck disable=SC2086 # a list of folders
[ -n "$logs" ] && tar -C "$out" -czf "$out/sanitize-logs.tgz" $logs
cat "$out/summary.txt"
