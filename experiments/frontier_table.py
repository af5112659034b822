#!/usr/bin/env python3
"""The frontier table: ktune's best against PyTorch SDPA, per shape and nkv.

Reads ktune result records and sdpa_ref.py records (JSON lines, the
schema of internal/results/record.go) and prints one markdown table per
batch size: for every (model, K/V type) and nkv, ktune's fastest passing
point in the cold and in the graph probe (each probe's own best), the
cuDNN reference in the same probes, the ratios, and the percentage of
the streaming read bandwidth ktune's cold best reaches.

    python3 experiments/frontier_table.py \\
        experiments/results/h200/h200-frontier2.jsonl \\
        experiments/results/h200/sdpa-frontier2.jsonl

Shape names are MODEL-TYPE-bBATCH (h200-frontier2.yaml). PyTorch SDPA has
no fp8 K/V input, so an fp8 row is compared with cuDNN on the same model
in f16 (the column says so): the same attention on twice the bytes, not
the same problem. A ratio below 1 means ktune is faster. Only records
with status ok (every gate passed) count.
"""

import argparse
import json
import re
import sys

SHAPE_RE = re.compile(r"^(?P<model>.+)-(?P<kv>f16|bf16|fp8)-b(?P<batch>\d+)$")
# Targets: batch 1 at least 10% faster than cuDNN, batch 16 at least 5%.
TARGET = {1: 0.90, 16: 0.95}


def load(paths):
    recs = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    recs.append(json.loads(line))
    return recs


def medians(rec):
    """probe name -> (median ns, pct of read bandwidth)."""
    out = {}
    for pr in rec.get("probes") or []:
        s = pr.get("summary") or {}
        if s.get("n"):
            out[pr["probe"]] = (s["median"], pr.get("pct_bw", 0.0))
    return out


def is_reference(rec):
    return rec["config"].get("kernel") == "torch"


def best(recs, want_reference, backend="sdpa-cudnn"):
    """(shape name, nkv) -> probe -> (median ns, pct_bw, variant)."""
    out = {}
    for r in recs:
        if r.get("status") != "ok" or is_reference(r) != want_reference:
            continue
        c = r["config"]
        if want_reference and c["variant"] != backend:
            continue
        cell = out.setdefault((c["shape"]["name"], c["nkv"]), {})
        for probe, (med, pct) in medians(r).items():
            if probe not in cell or med < cell[probe][0]:
                cell[probe] = (med, pct, c["variant"])
    return out


def rows(recs):
    """Table rows, sorted by batch, model order of appearance, type, nkv."""
    ours, ref = best(recs, False), best(recs, True)
    order = []
    for r in recs:
        n = r["config"]["shape"]["name"]
        if n not in order:
            order.append(n)
    out = []
    for (name, nkv), cell in ours.items():
        m = SHAPE_RE.match(name)
        if not m:
            continue
        model, kv, batch = m["model"], m["kv"], int(m["batch"])
        ref_name = name if kv != "fp8" else f"{model}-f16-b{batch}"
        rc = ref.get((ref_name, nkv), {})
        row = {"batch": batch, "model": model, "kv": kv, "nkv": nkv, "ref_kv": "f16" if kv == "fp8" else kv,
               "order": order.index(name)}
        for probe in ("cold", "graph"):
            o, c = cell.get(probe), rc.get(probe)
            row[probe] = o
            row["ref_" + probe] = c
            row["ratio_" + probe] = o[0] / c[0] if o and c else None
        out.append(row)
    out.sort(key=lambda r: (r["batch"], r["order"], r["nkv"]))
    return out


def fmt_us(x):
    return f"{x[0] / 1000:.1f}" if x else "–"


def fmt_ratio(x):
    return f"{x:.2f}" if x is not None else "–"


def verdict(row):
    t = TARGET.get(row["batch"])
    rc, rg = row["ratio_cold"], row["ratio_graph"]
    if t is None or rc is None or rg is None:
        return "no reference"
    if rc <= t and rg <= t:
        return "met"
    return "missed"


def markdown(rs):
    lines = []
    for batch in sorted({r["batch"] for r in rs}):
        lines.append(f"\n### batch {batch} (target: ratio ≤ {TARGET.get(batch, 1):.2f}, cold and graph)\n")
        lines.append("| shape, K/V | nkv | ktune cold / graph (µs) | best cold config | cuDNN cold / graph | "
                     "ratio cold / graph | % read BW (cold) | target |")
        lines.append("|---|---:|---:|---|---:|---:|---:|---|")
        for r in rs:
            if r["batch"] != batch:
                continue
            ref = f"{fmt_us(r['ref_cold'])} / {fmt_us(r['ref_graph'])}"
            if r["ref_kv"] != r["kv"]:
                ref += f" ({r['ref_kv']})"
            lines.append(
                f"| {r['model']} {r['kv']} | {r['nkv']} | {fmt_us(r['cold'])} / {fmt_us(r['graph'])} | "
                f"{r['cold'][2] if r['cold'] else '–'} | {ref} | "
                f"{fmt_ratio(r['ratio_cold'])} / {fmt_ratio(r['ratio_graph'])} | "
                f"{r['cold'][1]:.0f}% | {verdict(r)} |" if r["cold"] else
                f"| {r['model']} {r['kv']} | {r['nkv']} | – | – | {ref} | – | – | no ktune point |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="ktune and sdpa_ref.py result files (JSON lines)")
    a = ap.parse_args(argv)
    sys.stdout.write(markdown(rows(load(a.files))))


if __name__ == "__main__":
    main()
