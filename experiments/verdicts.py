#!/usr/bin/env python3
"""Summarise re-runs of committed specs: status counts, the gate cost per
compiled kernel (each kernel's records' gate_sec summed: its first point
carries the gates, the later ones only the checks of their timed
launches), by batch, and every configuration whose status differs from
the committed results of the same spec.

    python3 experiments/verdicts.py NEW.jsonl COMMITTED.jsonl [NEW2 COMMITTED2 ...]

Either file may be gzipped (.jsonl.gz).

A new record matches a committed one of the same variant, kernel, shape,
batch and nkv whose defines agree on every name both records have: a
define a kernel gained since (a new form's default, FIXCHUNK=0) does not
make the configuration a new one. A record that matches none, or more
than one, is counted and listed, never taken as agreeing.
"""
import gzip
import json
import statistics
import sys
from collections import Counter, defaultdict


def read(path):
    out = []
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    print(f"{path}: unreadable line skipped", file=sys.stderr)
    return out


def defines(r):
    return {d["name"]: d["value"] for d in r["config"].get("defines") or []}


def place(r):
    c = r["config"]
    sh = c["shape"]
    return (c["variant"], c["kernel"], sh["name"], sh["batch"], c["nkv"])


def kernel(r):
    c = r["config"]
    return (c["variant"], c["kernel"], tuple(sorted(defines(r).items())), c["shape"]["name"])


def match(r, olds):
    """The committed records that agree with r on every shared define."""
    d = defines(r)
    return [o for o in olds if all(d[n] == v for n, v in defines(o).items() if n in d)]


PARTS = ("inputs", "oracle", "upload", "device", "host")


def cost(n):
    """Gate cost per compiled kernel by batch and K/V form (contiguous, or
    paged at its PAGE_SIZE), and, where the records split it (gate_cost),
    the median of each part."""
    per = defaultdict(float)
    parts = defaultdict(lambda: dict.fromkeys(PARTS, 0.0))
    split = defaultdict(bool)
    group = {}
    for r in n:
        k = kernel(r)
        per[k] += r.get("gate_sec", 0) or 0
        gc = r.get("gate_cost")
        if gc:
            split[k] = True
            for p in PARTS:
                parts[k][p] += gc.get(p + "_sec", 0) or 0
        page = defines(r).get("PAGE_SIZE", "0")
        group[k] = (r["config"]["shape"]["batch"], int(page))
    lines = []
    for b, page in sorted(set(group.values())):
        ks = [k for k in per if group[k] == (b, page)]
        xs = sorted(per[k] for k in ks)
        form = f"paged {page}" if page else "contiguous"
        line = (f"  gate cost per compiled kernel at batch {b}, {form}: {len(xs)} kernels, "
                f"median {statistics.median(xs):.2f} s, max {xs[-1]:.2f} s, {sum(xs):.1f} s in all")
        sk = [k for k in ks if split[k]]
        if sk:
            line += "; medians of " + ", ".join(
                f"{p} {statistics.median(parts[k][p] for k in sk):.2f}" for p in PARTS)
            if len(sk) < len(ks):
                line += f" ({len(sk)} kernels split)"
        lines.append(line)
    return lines


def main(args):
    if len(args) % 2:
        sys.exit(__doc__)
    for new, old in zip(args[::2], args[1::2]):
        n, o = read(new), read(old)
        print(f"{new}: {len(n)} points {dict(Counter(r['status'] for r in n))}")
        for line in cost(n):
            print(line)
        by = defaultdict(list)
        for r in o:
            by[place(r)].append(r)
        diff, missing, ambiguous, same = [], [], [], 0
        for r in n:
            m = match(r, by.get(place(r), []))
            if not m:
                missing.append(place(r))
            elif len({x["status"] for x in m}) > 1 or len(m) > 1 and m[0]["status"] != r["status"]:
                ambiguous.append(place(r))
            elif m[0]["status"] != r["status"]:
                diff.append((place(r), m[0]["status"], r["status"]))
            else:
                same += 1
        print(f"  vs {old}: {same} verdicts equal, {len(diff)} differ, {len(missing)} configurations "
              f"not in the committed file, {len(ambiguous)} ambiguous")
        for k, a, b in diff[:20]:
            print(f"    {k}: {a} -> {b}")
        for k in (missing + ambiguous)[:10]:
            print(f"    unmatched: {k}")


if __name__ == "__main__":
    main(sys.argv[1:])
