#!/usr/bin/env bash
# time.sh: kcheck's timing mode on this machine's GPU, then the SASS of
# every timed attn_partial (SPLITS=32 build) summarized: load count and
# width, shuffles, exps, FMAs, and the order of loads (L), f16 conversions
# (H), shuffles (S), exps (E) and branches (B) in the code. Results go to
# $OUT (default ./out). Needs a GPU, nvcc, cuobjdump and libnvrtc.
set -u
cd "$(dirname "$0")"
CUDA=${CUDA:-/usr/local/cuda}
OUT=${OUT:-$(pwd)/out}
mkdir -p "$OUT/cubins"

echo "== build"
"$CUDA/bin/nvcc" -O2 -std=c++17 -o "$OUT/kcheck" kcheck.cu ktime.cu -lnvrtc -lcuda -L"$CUDA/lib64/stubs" || exit 1

echo "== time"
CUDA_HOME=$CUDA "$OUT/kcheck" -time -kernels ../../kernels -diag diag -cubins "$OUT/cubins" "$@" | tee "$OUT/time.txt"

echo "== SASS of attn_partial (SPLITS=32)"
printf "%-18s %4s %5s %5s %5s %5s %5s %5s %5s %5s %5s %5s  %s\n" kernel LDG .32 .64 .128 nc SHFL MUFU FFMA FMUL HADD BRA "order (L load, H f16->f32, S shfl, E ex2, B branch)"
for c in "$OUT"/cubins/*.s32.cubin; do
  name=$(basename "$c" .s32.cubin)
  "$CUDA/bin/cuobjdump" -sass -fun attn_partial "$c" > "$OUT/cubins/$name.sass" 2>&1
  awk -v name="$name" '
    / LDG\./ {
      ldg++; seq = seq "L"
      if ($0 ~ /LDG\.E\.128/) w128++; else if ($0 ~ /LDG\.E\.64/) w64++; else w32++
      if ($0 ~ /CONSTANT/) nc++
    }
    /HADD2\.F32|F2F\.F32\.F16/ { hadd++; seq = seq "H" }
    /SHFL\./ { shfl++; seq = seq "S" }
    /MUFU\./ { mufu++; if ($0 ~ /EX2/) seq = seq "E" }
    / FFMA/ { ffma++ }
    / FMUL/ { fmul++ }
    / BRA / { bra++; seq = seq "B" }
    END { printf "%-18s %4d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d  %s\n", name, ldg, w32, w64, w128, nc, shfl, mufu, ffma, fmul, hadd, bra, seq }
  ' "$OUT/cubins/$name.sass"
done | tee "$OUT/sass.txt"
