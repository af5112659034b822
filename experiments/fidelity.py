#!/usr/bin/env python3
"""ktune's medians against an engine's own benchmark method, point by
point: the join behind the fidelity tables of
results/h200/flashinfer-decode/NOTES.md and vllm-v2/NOTES.md.

    python3 experiments/fidelity.py --bench flashinfer-bench.jsonl h200-flashinfer.jsonl.gz
    python3 experiments/fidelity.py --bench vllm-bench.jsonl h200-vllm.jsonl.gz

The bench file is what experiments/flashinfer_bench.py or
experiments/vllm_bench.py wrote (which one is told by its records); the
other files are ktune results (.jsonl or .jsonl.gz). A ktune record
joins a bench line when they name the same kernel form and point:

- FlashInfer: variant flashinfer-FORM-LAYOUT (single, split, planned;
  hnd, nhd), heads, kv_heads, batch, nkv and PAGE_SIZE. The method's
  cold-L2 median (a flush before every call) is held against ktune's
  cold probe, its hot median against the hot probe.
- vLLM: heads, kv_heads, batch and nkv. The method launches the eager
  grid and never flushes, so each of its caches (vLLM's 1024 shared
  pages, own pages, own pages over a pool of ktune's size) is held
  against the hot probe of the eager variant (vllm-v2-nvcc-eager); the
  graph form's hot and cold (vllm-v2-nvcc) are shown beside it.

A ktune record whose status is not ok (a failed gate, an error) is shown
with its status and never counted as agreeing. Prints a Markdown table
and, last, how many points are within --tol (default 3%) and which are
not; exit 1 when a bench line found no ktune record, so a table cannot
silently shrink.
"""

import argparse
import gzip
import json
import sys

FI_VARIANT = "flashinfer-%s-%s"
VLLM_EAGER = "vllm-v2-nvcc-eager"
VLLM_GRAPH = "vllm-v2-nvcc"


def read_jsonl(path):
    """The records of a JSON-lines file, gzip-compressed when its name
    ends in .gz."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def define(rec, name):
    for d in rec["config"].get("defines") or []:
        if d["name"] == name:
            return d["value"]
    return None


def probe_us(rec, probe):
    """The probe's median in µs, or None when the record has none."""
    for p in rec.get("probes") or []:
        if p.get("probe") == probe and p.get("summary"):
            return p["summary"]["median"] / 1e3
    return None


def ktune_key(rec):
    """(variant, heads, kv_heads, batch, nkv, page) of a ktune record;
    page None where the kernel has no PAGE_SIZE define."""
    c = rec["config"]
    s = c["shape"]
    page = define(rec, "PAGE_SIZE")
    return (c["variant"], s["heads"], s["kv_heads"], s["batch"], c["nkv"], int(page) if page is not None else None)


def index(records):
    """ktune_key -> record; a point recorded twice keeps the last (a
    resumed sweep's newer measurement)."""
    return {ktune_key(r): r for r in records}


def engine_of(bench):
    if all("form" in b for b in bench):
        return "flashinfer"
    if all("num_blocks" in b for b in bench):
        return "vllm"
    raise ValueError("the bench file's records are neither flashinfer_bench.py's (form) nor vllm_bench.py's (num_blocks)")


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x, digits=2):
    return "-" if x is None else "%.*f" % (digits, x)


def flashinfer_rows(bench, ktune):
    """One row per bench line: (label, the method's number, ktune's,
    their ratio, the ktune status, extra cells)."""
    rows, missing = [], []
    for b in bench:
        label = "%d/%d b%d p%d %s %s nkv %d" % (b["heads"], b["kv_heads"], b["batch"], b["page"], b["layout"], b["form"], b["nkv"])
        if "error" in b or "wrong" in b:
            rows.append((label, None, None, None, "bench: " + (b.get("error") or b.get("wrong")), []))
            continue
        rec = ktune.get((FI_VARIANT % (b["form"], b["layout"]), b["heads"], b["kv_heads"], b["batch"], b["nkv"], b["page"]))
        if rec is None:
            missing.append(label)
            continue
        cold, hot, graph = probe_us(rec, "cold"), probe_us(rec, "hot"), probe_us(rec, "graph")
        rows.append((label, b["us_median"], cold, ratio(cold, b["us_median"]), rec["status"],
                     [fmt(b.get("us_median_hot")), fmt(hot), fmt(ratio(hot, b.get("us_median_hot")), 3), fmt(graph)]))
    header = ["point", "method cold", "ktune cold", "ktune / method", "status", "method hot", "ktune hot", "hot ratio", "ktune graph"]
    return header, rows, missing


def vllm_rows(bench, ktune):
    rows, missing = [], []
    for b in bench:
        label = "%d/%d b%d nkv %d, %s pages" % (b["heads"], b["kv_heads"], b["batch"], b["nkv"], b["num_blocks"])
        key = (b["heads"], b["kv_heads"], b["batch"], b["nkv"], 16)
        eager, graph = ktune.get((VLLM_EAGER,) + key), ktune.get((VLLM_GRAPH,) + key)
        if eager is None:
            missing.append(label)
            continue
        hot = probe_us(eager, "hot")
        rows.append((label, b["us_median"], hot, ratio(hot, b["us_median"]), eager["status"],
                     [fmt(probe_us(graph, "hot")) if graph else "-", fmt(probe_us(graph, "cold")) if graph else "-"]))
    header = ["point", "method", "ktune eager hot", "ktune / method", "status", "graph-form hot", "graph-form cold"]
    return header, rows, missing


def verdict(rows, tol):
    """(within, outside): labels of the rows whose ratio is within tol of
    1 with an ok record, and of every other row."""
    within, outside = [], []
    for label, _, _, r, status, _ in rows:
        (within if status == "ok" and r is not None and abs(r - 1) <= tol else outside).append(label)
    return within, outside


def markdown(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for label, method, ours, r, status, extra in rows:
        out.append("| " + " | ".join([label, fmt(method), fmt(ours), fmt(r, 3), status] + extra) + " |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", required=True, help="flashinfer_bench.py's or vllm_bench.py's JSON lines")
    ap.add_argument("--tol", type=float, default=0.03, help="the agreement asked for, as a fraction (default 0.03)")
    ap.add_argument("results", nargs="+", help="ktune results files (.jsonl or .jsonl.gz)")
    a = ap.parse_args(argv)
    bench = read_jsonl(a.bench)
    if not bench:
        raise SystemExit("%s: no records" % a.bench)
    ktune = index([r for p in a.results for r in read_jsonl(p)])
    header, rows, missing = (flashinfer_rows if engine_of(bench) == "flashinfer" else vllm_rows)(bench, ktune)
    print(markdown(header, rows))
    within, outside = verdict(rows, a.tol)
    print("\n%d of %d points within %.1f%%" % (len(within), len(rows), 100 * a.tol))
    for label in outside:
        print("  outside: " + label)
    for label in missing:
        print("  no ktune record: " + label, file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
