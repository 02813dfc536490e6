#!/usr/bin/env python3
"""Refreshes the figure tables of the documents from recorded campaigns.

A table sits between two markers:

    <!-- figures: experiments/campaigns/NAME.json -->
    ... what `harness campaign table experiments/campaigns/NAME.json` prints ...
    <!-- end figures -->

so nobody types a figure, and each table carries the campaign's date and
commit. Run it after committing a campaign's context; `--check` (in
.ci/run) fails when a table differs from what the tool prints. `--age`
lists every committed campaign (the tables' and those a single run is
placed in) with its commit and fails when it was
recorded with uncommitted changes or when a later commit touched the code
it describes (not in .ci/run: every code change would then ask for a
re-recorded campaign before it could land). The harness
is `cargo run -q -p harness --` unless $HARNESS names a binary.
Standard library only.
"""
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [
    ROOT / "experiments" / "README.md",
    ROOT / "experiments" / "real-parts.md",
    ROOT / "docs" / "tutorial.md",
]
BLOCK = re.compile(
    r"(<!-- figures: (?P<ctx>\S+) -->\n)(?P<body>.*?)(<!-- end figures -->)", re.S
)


def harness():
    if os.environ.get("HARNESS"):
        return shlex.split(os.environ["HARNESS"])
    return ["cargo", "run", "-q", "-p", "harness", "--"]


def table(ctx):
    out = subprocess.run(
        harness() + ["campaign", "table", ctx],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    return out.stdout


def refresh(text):
    return BLOCK.sub(lambda m: m.group(1) + "\n" + table(m.group("ctx")) + "\n" + m.group(4), text)


CODE = ["harness", "system-under-test", "crates", "Cargo.lock"]


def age(ctx):
    """(line, is_current) for one recorded campaign."""
    data = json.loads((ROOT / ctx).read_text())
    commit = data.get("commit") or ""
    head = commit.split()[0].removesuffix("-dirty") if commit else ""
    where = f"{ctx}: recorded {data.get('recorded', '?')} at {commit or 'no commit'}"
    if not head or commit != head:
        return where + ": not a clean commit", False
    path = ROOT / ctx
    experiment = str((path.parent.parent / (path.stem.removesuffix("-quick") + ".yaml")).relative_to(ROOT))
    later = subprocess.run(
        ["git", "log", "--oneline", f"{head}..HEAD", "--"] + CODE + [experiment],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    if later:
        return where + f": {len(later)} later commit(s) touch the code or {experiment}", False
    return where + ": current", True


def report_ages():
    # Every committed campaign: the tables' and those each single run is
    # placed in (`campaigns/NAME-quick.json` beside an experiment file).
    ctxs = sorted(
        str(p.relative_to(ROOT))
        for d in ["experiments/campaigns", "docs/tutorial/campaigns"]
        for p in (ROOT / d).glob("*.json")
    )
    results = [age(c) for c in ctxs]
    for line, _ in results:
        print(line)
    return 0 if all(ok for _, ok in results) else 1


def main():
    if "--age" in sys.argv:
        return report_ages()
    stale = []
    for doc in DOCUMENTS:
        text = doc.read_text()
        new = refresh(text)
        if new != text:
            stale.append(doc.relative_to(ROOT))
            if "--check" not in sys.argv:
                doc.write_text(new)
    if "--check" in sys.argv and stale:
        for d in stale:
            print(f"{d}: a figure table differs from `harness campaign table`; run python3 ci/docs_figures.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
