#!/usr/bin/env bash
# Gate power and gate cost on a GPU machine with a prebuilt bin/ktune:
#
#   experiments/run-defects.sh [OUTDIR]      (default $OUT/defects, else out/defects)
#
# 1. sweeps experiments/defects.yaml (planted defects and a correct d2) and
#    prints, per kernel: the gate expected to catch it, and where it was
#    caught (status, failed gate kinds with their input sets, first detail);
# 2. sweeps the seed experiments (SEEDS, default "slice"; every built-in is
#    in SEEDS="slice splits staging multiwarp h200-frontier h200-fused";
#    DEFECTS=0 skips step 1)
#    with -v, only the points SEED_ONLY selects (default nkv=32768: the
#    first point of every gate group, so every compiled kernel is gated
#    once and timed once), and reports the gate phase per compiled kernel
#    (records' gate_sec, and the backend's "gates: N launch pairs" lines)
#    and any gate failure of a built-in (a false alarm).
#
# Writes OUTDIR/<spec>/results.jsonl, OUTDIR/<spec>.log and OUTDIR/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-out}/defects}
mkdir -p "$out"
k=./bin/ktune
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$out/cache}

specs="${SEEDS-slice}"
[ "${DEFECTS:-1}" != 0 ] && specs="defects $specs"
for s in $specs; do
  only=()
  [ "$s" != defects ] && [ -n "${SEED_ONLY-nkv=32768}" ] && only=(--only "${SEED_ONLY-nkv=32768}")
  t0=$(date +%s)
  $k sweep "experiments/$s.yaml" -o "$out/$s" -v ${only[@]+"${only[@]}"} >"$out/$s.log" 2>&1
  echo "$s: exit $?, $(( $(date +%s) - t0 )) s" | tee -a "$out/wall.txt"
done

python3 - "$out" $specs <<'PY' | tee "$out/summary.txt"
import collections, json, re, sys

out, specs = sys.argv[1], sys.argv[2:]

def records(spec):
    try:
        with open(f"{out}/{spec}/results.jsonl") as f:
            return [json.loads(l) for l in f if l.strip()]
    except OSError as e:
        print(f"{spec}: no results ({e})")
        return []

expected = {
    "d2": "none (control)",
    "nkvgrid": "replay",
    "state": "fresh, tolerance (descending walk), replay vs oracle",
    "skipnewest": "tolerance/peaked",
    "ftz": "tolerance/subnormal",
    "readpast": "tolerance/peaked",
    "race": "determinism (probabilistic)",
    "mmaf": "none (control: re-armed counters)",
    "writeinput": "readonly (k)",
    "writepast": "guard (after partial)",
    "stalenan": "stale",
    "memo": "timed",
    "readpastend": "bounds (fault at the capacity)",
    "longchunk": "tolerance/uniform at the capacity (tiled)",
    "warpsync": "none without --sanitize=racecheck (warning hazards)",
}
by = collections.OrderedDict()
for r in (records("defects") if "defects" in specs else []):
    by.setdefault(r["config"]["variant"], []).append(r)
print(f"{'defect':<11} {'expected gate':<52} caught where")
for v, rs in by.items():
    statuses = ",".join(sorted({f"{r['status']}@{r['config']['nkv']}" for r in rs}))
    failed = sorted({f"{g['kind']}/{g.get('inputs', '')}" for r in rs for g in r.get("gates", []) if not g["pass"]})
    detail = next((g.get("detail", "") for r in rs for g in r.get("gates", []) if not g["pass"]), "")
    print(f"{v:<11} {expected.get(v, '?'):<52} {statuses}  {' '.join(failed) or '-'}")
    if detail:
        print(f"{'':<11} first: {detail[:150]}")

print()
print("gate phase per compiled kernel (first point of each gate group; later points copy the verdict)")
for spec in specs:
    rs = records(spec)
    secs = [r.get("gate_sec", 0) for r in rs if r.get("gate_sec", 0) > 0.005]
    pairs = []
    try:
        with open(f"{out}/{spec}.log") as f:
            pairs = [int(m.group(1)) for m in re.finditer(r"gates: (\d+) launch pairs", f.read())]
    except OSError:
        pass
    if secs:
        secs.sort()
        print(f"  {spec}: {len(secs)} gated kernels, gate_sec median {secs[len(secs)//2]:.2f} s, "
              f"max {secs[-1]:.2f} s, total {sum(secs):.1f} s; launch pairs per kernel "
              f"{min(pairs) if pairs else '?'}..{max(pairs) if pairs else '?'}")
    if spec != "defects":
        bad = [r for r in rs if r["status"] == "gate_failed"]
        print(f"  {spec}: {len(rs)} records, {len(bad)} gate_failed (false alarms: a built-in must pass)")
        for r in bad[:10]:
            print(f"    {r['config']['variant']} nkv {r['config']['nkv']}: {r.get('error', '')[:200]}")
PY
