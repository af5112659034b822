#!/usr/bin/env bash
# run.sh: build kcheck with nvcc, run it over the seed family, then report
# each kernel's resources (ptxas -v) and dump the SASS of r4 and d2 with the
# order of their loads, shuffles and exps. Results go to $OUT (default
# ./out). Needs a GPU, nvcc and libnvrtc; see README.md.
set -u
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUOBJDUMP=${CUOBJDUMP:-/usr/local/cuda/bin/cuobjdump}
SANITIZER=${SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
KDIR=../../kernels
OUT=${OUT:-$(pwd)/out}
mkdir -p "$OUT"
status=0

echo "== build"
"$NVCC" -O2 -std=c++17 -o "$OUT/kcheck" kcheck.cu -lnvrtc -lcuda -L/usr/local/cuda/lib64/stubs || exit 1

echo "== kcheck"
"$OUT/kcheck" -kernels "$KDIR" -full "$OUT/kcheck_full.txt" | tee "$OUT/kcheck.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

echo "== resources (ptxas -v, sm_90, HEAD_DIM=128, SPLITS=32)"
for kv in 1 0; do
  for f in r4 d2 pair cpasync rows warp4; do
    for nr in 4 8; do
      case $f in rows|warp4|pair) [ $nr = 8 ] && continue;; esac
      name=${f}_kv$kv
      [ $nr = 8 ] && name=${name}_nr8
      "$NVCC" -cubin -arch=sm_90 -O3 -Xptxas -v -DHEAD_DIM=128 -DKV_F16=$kv -DSPLITS=32 -DNR=$nr -DRING=2 \
        -I"$KDIR" "$KDIR/$f.cu" -o "$OUT/$name.cubin" 2> "$OUT/$name.ptxas.txt" || { cat "$OUT/$name.ptxas.txt"; status=1; continue; }
      echo "$name: $(grep -A3 "Compiling entry function 'attn_partial'" "$OUT/$name.ptxas.txt" | grep -E 'stack frame|Used' | tr -s ' ' | tr '\n' ' ')"
    done
  done
done | tee "$OUT/resources.txt"

echo "== SASS: op order in attn_partial (L=LDG, S=SHFL.BFLY, E=MUFU.EX2, C=LDGSTS)"
for name in r4_kv1 d2_kv1 r4_kv0 d2_kv0 r4_kv1_nr8 d2_kv1_nr8 cpasync_kv1; do
  [ -f "$OUT/$name.cubin" ] || continue
  "$CUOBJDUMP" -sass -fun attn_partial "$OUT/$name.cubin" > "$OUT/$name.sass"
  awk -v name="$name" '
    /LDGSTS/ { seq = seq "C"; next }
    /LDGDEPBAR/ { next }
    /LDG\.E/    { seq = seq "L"; if (!seenS) pre++; ldg++ }
    /SHFL.BFLY/ { seq = seq "S"; if (!seenS) { seenS = 1; first = $0 } }
    /MUFU.EX2/  { seq = seq "E" }
    END { printf "%s: %d LDG total, %d before the first SHFL.BFLY\n  %s\n", name, ldg, pre, seq }
  ' "$OUT/$name.sass"
done | tee "$OUT/sass_order.txt"

if [ -x "$SANITIZER" ]; then
  echo "== compute-sanitizer (quick set)"
  timeout 100 "$SANITIZER" --tool memcheck "$OUT/kcheck" -kernels "$KDIR" -quick > "$OUT/memcheck.txt" 2>&1
  echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|kcheck:' "$OUT/memcheck.txt" | tr '\n' ' ')"
  timeout 100 "$SANITIZER" --tool racecheck "$OUT/kcheck" -kernels "$KDIR" -quick > "$OUT/racecheck.txt" 2>&1
  echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|kcheck:' "$OUT/racecheck.txt" | tr '\n' ' ')"
fi
exit $status
