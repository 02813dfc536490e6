#!/usr/bin/env python3
"""Compares runs of one experiment made with different numbers of load agents.

    python3 ci/agents_compare.py DIR

DIR holds one folder per run, named `agents<N>-<i>` (ci/agents.sh writes
them), each with the run's summary.json somewhere below it. Prints, per
variant, every run's peak failure ratio, wave count and verdict, then:

- the hard invariants, which must hold in every run: the same submitted
  document ids (the order-independent digest), every document accounted for;
- how far apart the peaks are between runs with DIFFERENT agent counts (one
  value per adjacent pair, as the runs alternated) and between runs with the
  SAME count (every two runs of one count): sharding the load changes
  nothing the harness can measure when the first spread is no wider than the
  second, which is the run-to-run reproducibility of the system under test
  itself at this seed;
- how often two whole runs agree (every verdict and wave count equal, every
  peak within 0.05) across the two counts and within each.

Exits 1 when an invariant fails, 2 when DIR holds no runs. Standard library
only.
"""

import itertools
import json
import re
import sys
from pathlib import Path


def load_runs(root):
    runs = []
    for d in sorted(root.iterdir()):
        m = re.fullmatch(r"agents(\d+)-(\d+)", d.name)
        if not m or not d.is_dir():
            continue
        summaries = [p for p in d.rglob("summary.json") if not any(q.is_symlink() for q in p.parents)]
        if not summaries:
            runs.append({"name": d.name, "agents": int(m[1]), "order": int(m[2]), "summary": None})
            continue
        runs.append({
            "name": d.name,
            "agents": int(m[1]),
            "order": int(m[2]),
            "summary": json.loads(summaries[0].read_text()),
        })
    runs.sort(key=lambda r: (r["order"], r["agents"]))
    return runs


def spread(pairs):
    diffs = [abs(a - b) for a, b in pairs]
    if not diffs:
        return "no pairs"
    within = sum(d <= 0.05 + 1e-9 for d in diffs)
    return f"{len(diffs)} pairs, differ by {min(diffs):.3f}-{max(diffs):.3f}, within 0.05: {within} of {len(diffs)}"


def permutation_p(xs, ys):
    """Two-sided exact permutation test on the difference of means: the share
    of ways to relabel the runs whose |difference| is at least the observed
    one (sampled when there are too many ways to count)."""
    pooled = xs + ys
    observed = abs(sum(ys) / len(ys) - sum(xs) / len(xs))
    total = sum(pooled)
    ways = list(itertools.islice(itertools.combinations(range(len(pooled)), len(ys)), 200_000))
    hits = 0
    for chosen in ways:
        y_sum = sum(pooled[i] for i in chosen)
        x_mean = (total - y_sum) / len(xs)
        if abs(y_sum / len(ys) - x_mean) >= observed - 1e-12:
            hits += 1
    return hits / len(ways)


def whole_run_agreement(runs, variants, counts):
    """How often two runs agree on everything at once (every variant's
    verdict and wave count, every peak within 0.05), across the two agent
    counts and within each: the per-pair test means something only when
    runs of one count pass it more often than runs of different counts."""

    def shape(run):
        by_name = {v["name"]: v for v in run["summary"]["variants"]}
        return [
            (by_name[n]["verdict"]["verdict"], len(by_name[n]["waves"]), by_name[n]["metrics"].get("peak_failure_ratio"))
            for n in variants
            if n in by_name
        ]

    def agree(a, b):
        sa, sb = shape(a), shape(b)
        return len(sa) == len(sb) and all(
            x[0] == y[0] and x[1] == y[1] and x[2] is not None and y[2] is not None and abs(x[2] - y[2]) <= 0.05 + 1e-9
            for x, y in zip(sa, sb)
        )

    def share(pairs):
        return f"{sum(agree(a, b) for a, b in pairs)} of {len(pairs)}"

    low, high = ([r for r in runs if r["agents"] == n] for n in counts)
    lines = [
        "whole runs agreeing (every verdict and wave count equal, every peak within 0.05):",
        f"  {counts[0]} vs {counts[1]} agents: {share([(a, b) for a in low for b in high])}"
        f" (run one after the other: {share([(a, b) for a in low for b in high if a['order'] == b['order']])})",
    ]
    for n, group in zip(counts, (low, high)):
        lines.append(f"  {n} vs {n} agent(s): {share(list(itertools.combinations(group, 2)))}")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    runs = load_runs(Path(sys.argv[1]))
    if not runs:
        print(f"no agents<N>-<i> runs under {sys.argv[1]}", file=sys.stderr)
        return 2
    problems = []
    for r in runs:
        if r["summary"] is None:
            problems.append(f"{r['name']}: no summary.json (the run did not finish)")
    runs = [r for r in runs if r["summary"] is not None]
    variants = [v["name"] for v in runs[0]["summary"]["variants"]] if runs else []
    counts = sorted({r["agents"] for r in runs})
    for name in variants:
        print(f"== {name}")
        peaks = {}
        shapes = {}
        digests = set()
        for r in runs:
            v = next((v for v in r["summary"]["variants"] if v["name"] == name), None)
            if v is None:
                problems.append(f"{r['name']}: no variant {name}")
                continue
            integ = v["integrity"]
            digests.add(integ["submitted_digest"])
            peak = v["metrics"].get("peak_failure_ratio")
            peaks[r["name"]] = (r["agents"], r["order"], peak)
            shapes.setdefault((v["verdict"]["verdict"], len(v["waves"])), []).append(r["name"])
            print(
                f"  {r['name']:<12} peak {peak if peak is None else f'{peak:.3f}':>6}"
                f"  waves {len(v['waves'])}  {v['verdict']['verdict']:<12}"
                f"  submitted {integ['submitted']} digest {integ['submitted_digest']}"
                f"  accounted {integ['accounted']}  incorrect {integ['incorrect_results']}"
            )
            if not integ["accounted"] or integ["incorrect_results"]:
                problems.append(f"{r['name']} {name}: integrity {integ['problems']}")
        if len(digests) > 1:
            problems.append(f"{name}: the runs submitted different document ids ({', '.join(sorted(digests))})")
        if len(shapes) == 1:
            (verdict, waves), = shapes
            print(f"  every run: {verdict}, {waves} wave(s)")
        else:
            for (verdict, waves), names in sorted(shapes.items()):
                print(f"  {verdict}, {waves} wave(s): {', '.join(names)}")
        known = {k: p for k, p in peaks.items() if p[2] is not None}
        ordered = sorted(known.values(), key=lambda p: (p[1], p[0]))
        across = [
            (a[2], b[2])
            for a, b in zip(ordered, ordered[1:])
            if a[0] != b[0] and a[1] == b[1]
        ]
        print(f"  different agent counts (pairs run one after the other): {spread(across)}")
        by_count = {n: [p[2] for p in known.values() if p[0] == n] for n in counts}
        if len(counts) == 2 and all(len(by_count[n]) >= 2 for n in counts):
            xs, ys = by_count[counts[0]], by_count[counts[1]]
            diff = sum(ys) / len(ys) - sum(xs) / len(xs)
            print(
                f"  mean peak with {counts[1]} minus with {counts[0]}: {diff:+.3f}"
                f" (permutation test p = {permutation_p(xs, ys):.2f}: so large a difference"
                " arises from that share of relabellings of these runs)"
            )
        for n in counts:
            same = [p[2] for p in known.values() if p[0] == n]
            print(f"  {n} agent(s) among themselves: {spread(list(itertools.combinations(same, 2)))}")
            if same:
                print(f"  {n} agent(s): mean peak {sum(same) / len(same):.3f} over {len(same)} runs")
    if len(counts) == 2:
        print(whole_run_agreement(runs, variants, counts))
    if problems:
        print("INVARIANTS FAILED:")
        for p in problems:
            print(f"  {p}")
        return 1
    print("invariants hold: the same document ids in every run, every document accounted for, no incorrect result")
    return 0


if __name__ == "__main__":
    sys.exit(main())
