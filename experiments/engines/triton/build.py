"""Builds the Triton decode kernel of decode.py for ktune: a CUBIN and
Triton's metadata JSON per kernel, into a given directory.

    python3 experiments/engines/triton/build.py OUTDIR [--splits 16] [--head-dim 128]

Needs Triton, PyTorch and a GPU (the kernels are compiled by launching
them once, as an engine's warm-up would). Writes OUTDIR/ktune_tt_partial.
{cubin,json} and OUTDIR/ktune_tt_combine.{cubin,json}, copied from the
Triton cache the launch filled (a fresh one, so that nothing stale is
taken), and checks the two launches against a float64 reference on a
small case before it writes anything. SPLITS and HEAD_DIM are compiled
in (constexpr): a build serves one of each.
"""

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile

CACHE = tempfile.mkdtemp(prefix="ktune-triton-cache-")
os.environ["TRITON_CACHE_DIR"] = CACHE  # before triton is imported

import torch  # noqa: E402
import triton  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode import ktune_tt_combine, ktune_tt_partial  # noqa: E402

NAMES = ("ktune_tt_partial", "ktune_tt_combine")


def run(splits, head_dim, heads=28, kv_heads=4, batch=2, capacity=1024, nkvs=(1000, 37)):
    """Launches both kernels once (compiling them) and returns out and
    the float64 reference."""
    dev = "cuda"
    g = torch.Generator(device="cpu").manual_seed(1)
    q = torch.randn(batch, heads, head_dim, generator=g).to(dev)
    k = torch.randn(batch, capacity, kv_heads, head_dim, generator=g).half().to(dev)
    v = torch.randn(batch, capacity, kv_heads, head_dim, generator=g).half().to(dev)
    positions = torch.tensor([n - 1 for n in nkvs[:batch]], dtype=torch.int32, device=dev)
    partial = torch.full((batch, splits, heads, head_dim + 4), float("nan"), device=dev)
    out = torch.full((batch, heads, head_dim), float("nan"), device=dev)
    scale = head_dim ** -0.5
    ktune_tt_partial[(splits, heads, batch)](q, k, v, positions, partial, heads, kv_heads, capacity, scale,
                                            HEAD_DIM=head_dim, SPLITS=splits, BLOCK_N=32, num_warps=4)
    ktune_tt_combine[(heads, batch)](partial, out, heads,
                                     HEAD_DIM=head_dim, SPLITS=splits, BLOCK_S=triton.next_power_of_2(splits), num_warps=2)
    torch.cuda.synchronize()
    ref = torch.empty(batch, heads, head_dim, dtype=torch.float64)
    group = heads // kv_heads
    for b in range(batch):
        n = nkvs[b]
        for h in range(heads):
            kk = k[b, :n, h // group].double().cpu()
            vv = v[b, :n, h // group].double().cpu()
            w = torch.softmax(kk @ q[b, h].double().cpu() * scale, dim=0)
            ref[b, h] = w @ vv
    return out.double().cpu(), ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--splits", type=int, default=16)
    ap.add_argument("--head-dim", type=int, default=128)
    a = ap.parse_args()
    out, ref = run(a.splits, a.head_dim)
    err = (out - ref).abs().max().item()
    print(f"triton {triton.__version__}: max |out - ref| = {err:.3g} (SPLITS {a.splits}, head_dim {a.head_dim})")
    if not err < 1e-2:
        sys.exit(f"the Triton kernel is wrong on the build's check (max error {err})")
    os.makedirs(a.outdir, exist_ok=True)
    for name in NAMES:
        found = []
        for meta in glob.glob(os.path.join(CACHE, "**", name + ".json"), recursive=True):
            cubin = meta[: -len(".json")] + ".cubin"
            if os.path.exists(cubin):
                found.append((meta, cubin))
        if len(found) != 1:
            sys.exit(f"{name}: want one compiled kernel in the Triton cache {CACHE}, found {len(found)}")
        meta, cubin = found[0]
        with open(meta) as f:
            m = json.load(f)
        print(f"{name}: num_warps {m.get('num_warps')}, shared {m.get('shared')}, "
              f"global_scratch_size {m.get('global_scratch_size', 'absent')}, "
              f"profile_scratch_size {m.get('profile_scratch_size', 'absent')}")
        shutil.copyfile(meta, os.path.join(a.outdir, name + ".json"))
        shutil.copyfile(cubin, os.path.join(a.outdir, name + ".cubin"))
    shutil.rmtree(CACHE, ignore_errors=True)


if __name__ == "__main__":
    main()
