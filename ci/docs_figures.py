#!/usr/bin/env python3
"""Refreshes the figure tables of the documents from recorded campaigns.

A table sits between two markers:

    <!-- figures: experiments/campaigns/NAME.json -->
    ... what `harness campaign table experiments/campaigns/NAME.json` prints ...
    <!-- end figures -->

so nobody types a figure, and each table carries the campaign's date and
commit. Run it after committing a campaign's context; `--check` (in
.ci/run) fails when a table differs from what the tool prints. The harness
is `cargo run -q -p harness --` unless $HARNESS names a binary.
Standard library only.
"""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "experiments" / "README.md", ROOT / "experiments" / "real-parts.md"]
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


def main():
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
