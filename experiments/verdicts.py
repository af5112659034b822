#!/usr/bin/env python3
"""Summarise re-runs of committed specs: status counts, the gate cost per
compiled kernel (from each record's gate_sec) and every configuration whose
status differs from the committed results of the same spec.

    python3 experiments/verdicts.py NEW.jsonl COMMITTED.jsonl [NEW2 COMMITTED2 ...]
"""
import json
import sys
from collections import Counter


def read(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    print(f"{path}: unreadable line skipped", file=sys.stderr)
    return out


def key(r):
    c = r["config"]
    sh = c["shape"]
    defs = ",".join(f'{d["name"]}={d["value"]}' for d in c.get("defines") or [])
    return (c["variant"], c["kernel"], defs, sh["name"], sh["batch"], c["nkv"])


def main(args):
    if len(args) % 2:
        sys.exit(__doc__)
    for new, old in zip(args[::2], args[1::2]):
        n, o = read(new), read(old)
        gated = [r.get("gate_sec", 0) for r in n if r.get("gate_sec", 0) > 1e-3]
        per = sum(gated) / len(gated) if gated else 0
        print(f"{new}: {len(n)} points {dict(Counter(r['status'] for r in n))}; "
              f"gates ran for {len(gated)} compiled kernels, {sum(gated):.2f} s in all, {per*1e3:.0f} ms each")
        was = {key(r): r["status"] for r in o}
        diff = [(k, was.get(k), r["status"]) for r in n for k in [key(r)] if was.get(k) not in (None, r["status"])]
        missing = sum(1 for r in n if key(r) not in was)
        print(f"  vs {old}: {len(diff)} verdicts differ, {missing} configurations not in the committed file")
        for k, a, b in diff[:20]:
            print(f"    {k}: {a} -> {b}")


if __name__ == "__main__":
    main(sys.argv[1:])
