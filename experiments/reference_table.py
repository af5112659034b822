#!/usr/bin/env python3
"""ktune's paged kernels against an external paged decode reference.

Reads ktune result records (JSON lines) and a reference's CSV (one line
per point: shape,kv_dtype,batch,nkv,page_size,probe,median_us,...; the
format of the FlashInfer measurements in
experiments/results/h200/frontier3/flashinfer/) and prints, per batch,
one markdown table: for every (model, K/V type, nkv, page size) and probe,
ktune's fastest passing paged point, the reference and the ratio, against
the target (batch 1: ktune <= 0.97x the reference; batch 16: <= 1.00x).

    python3 experiments/reference_table.py KTUNE.jsonl REFERENCE.csv

The reference's graph time is the faster of its "graph" (the plan an
engine captures: its CUDA-graph plan) and "graph_plain" (its default
plan in a graph), so that the ratio never flatters ktune; the cell says
which. Only ktune records with status ok (every gate passed) and a
PAGE_SIZE define count; a point either side lacks is listed as such and
never counted as met.
"""

import csv
import json
import sys
from collections import defaultdict

TARGET = {1: 0.97, 16: 1.00}


def ktune_best(path):
    """(model, kv, batch, nkv, page, probe) -> (median µs, variant)."""
    best = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if r.get("status") != "ok":
                continue
            c = r["config"]
            d = {x["name"]: x["value"] for x in c.get("defines") or []}
            if int(d.get("PAGE_SIZE", 0)) == 0:
                continue
            sh = c["shape"]
            model = sh["name"].split("-")[0]
            for p in r.get("probes") or []:
                m = (p.get("summary") or {}).get("median")
                if not m:
                    continue
                k = (model, sh["kv_dtype"], sh["batch"], c["nkv"], int(d["PAGE_SIZE"]), p["probe"])
                if k not in best or m / 1e3 < best[k][0]:
                    best[k] = (m / 1e3, c["variant"])
    return best


def reference(path):
    """(model, kv, batch, nkv, page, probe) -> (median µs, which probe)."""
    ref = {}
    with open(path) as f:
        for row in csv.DictReader(l for l in f if not l.startswith("#")):
            probe = row["probe"]
            k = (row["shape"], row["kv_dtype"], int(row["batch"]), int(row["nkv"]), int(row["page_size"]),
                 "graph" if probe.startswith("graph") else probe)
            t = float(row["median_us"])
            if k not in ref or t < ref[k][0]:
                ref[k] = (t, probe)
    return ref


def table(best, ref):
    lines, met, missed, lacking = [], 0, 0, []
    rows = defaultdict(list)
    for k in sorted(set(best) | set(ref)):
        rows[k[2]].append(k)
    for batch in sorted(rows):
        goal = TARGET.get(batch)
        lines.append(f"\n### batch {batch} (target: ktune <= {goal:.2f}x the reference)\n")
        lines.append("| model | K/V | nkv | page | probe | ktune µs (variant) | reference µs | ratio | |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for k in rows[batch]:
            if k not in best or k not in ref:
                lacking.append(k)
                continue
            (t, v), (rt, rp) = best[k], ref[k]
            ratio = t / rt
            ok = goal is not None and ratio <= goal
            met += ok
            missed += not ok
            lines.append(f"| {k[0]} | {k[1]} | {k[3]} | {k[4]} | {k[5]} | {t:.1f} ({v}) | {rt:.1f} ({rp}) | "
                         f"{ratio:.3f} | {'met' if ok else 'missed'} |")
    lines.append(f"\n{met} met, {missed} missed, {len(lacking)} without a point on both sides")
    for k in lacking:
        lines.append(f"  no pair: {k}")
    return "\n".join(lines), met, missed, lacking


def main(args):
    if len(args) != 2:
        sys.exit(__doc__)
    text, _, _, _ = table(ktune_best(args[0]), reference(args[1]))
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
