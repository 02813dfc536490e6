#!/usr/bin/env python3
"""Every example of the user docs runs: each ```sh block of README.md,
docs/**/*.md and experiments/*.md is run, or checked with `harness
validate`, or skipped for a reason written in the page. Standard library
only.

Why: a command in the docs that exits 2 (a clock that refuses it, an
option renamed, a file moved) is found here, not by the next new user.

How a block is treated is said by an HTML comment on the line before its
fence (the default is `run`):

    <!-- example: skip (REASON) -->      not run; printed with its reason
    <!-- example: validate (REASON) -->  `harness validate` on each file it names
    <!-- example: shell -->              run as written by bash (any command)
    <!-- example: output -->             run, and its output must be the
                                          next fenced block's (run ids and
                                          wall times masked)
    <!-- example: exit 1 (REASON) -->    run; exit 1 (an expectation that
                                          failed) is accepted too

`run`: every line must be a harness command (`harness`, `cargo run -p
harness --`, `target/debug/harness`), which runs against the built binary
in its short form on the virtual clock: `--quick` and `--clock virtual`
added, a campaign's seeds cut to five (the fewest that can prove a share
claimed at 90 %; one that runs until settled is left to settle), a sweep's grid to 2 x 2, a
threshold's search to one run per probe; report folders go to a temporary
folder. Alert rules need a real Prometheus: a command the virtual clock
refuses for them runs `--without-alerts` (exit 1 accepted when every
expectation that failed is an alert's, read n/a); one it refuses for anything else (real processes)
is checked with `harness validate` instead. Exit 2 or more, a timeout, or a
line that is not a harness command in a `run` block fails the check.

    python3 ci/examples.py [--harness PATH] [--timeout S] [FILE.md ...]

(default binary: $CARGO_TARGET_DIR/debug/harness, else target/debug/harness)

Exit 0 when every example passed, 1 when one failed, 2 for a bad argument.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILES = ["README.md", "docs/**/*.md", "experiments/*.md"]
MARKER = re.compile(r"<!--\s*example:\s*(skip|validate|shell|output|exit 1)\s*(?:\((.*)\))?\s*-->")
FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)\s*$")
HARNESS_PREFIXES = (
    ["cargo", "run", "-p", "harness", "--"],
    ["cargo", "run", "-q", "-p", "harness", "--"],
    ["cargo", "run", "--release", "-p", "harness", "--"],
    ["target/debug/harness"],
    ["target/release/harness"],
    ["harness"],
)
# A word in capitals standing for something (FILE, DIR, NS) is a template, not a command.
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_0-9]*(\.[a-z]+)?(\.\.\.)?$|^\.\.\.$|^\[.*\]?$")
SUBCOMMANDS = {"validate", "ablate", "bench", "report", "campaign", "sweep", "threshold",
               "schema", "render", "help", "agent"}
REFUSED_VIRTUAL = "cannot run with --clock virtual"


class Block:
    """One fenced sh block: where it is, its text, its marker, and the
    fenced block after it (for `output`)."""

    def __init__(self, path, line, text, kind, reason, following):
        self.path, self.line, self.text = path, line, text
        self.kind, self.reason, self.following = kind, reason, following

    def where(self):
        return f"{os.path.relpath(self.path, ROOT)}:{self.line}"


def blocks_of(path):
    """The sh blocks of one Markdown file, each with its marker."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, fences, i = [], [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*" + m.group(2) + r"\s*$", lines[j]):
            j += 1
        fences.append((i, m.group(3), "\n".join(lines[i + 1:j])))
        i = j + 1
    for n, (start, lang, text) in enumerate(fences):
        if lang != "sh":
            continue
        kind, reason = "run", None
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0:
            mark = MARKER.search(lines[k])
            if mark:
                kind, reason = mark.group(1), mark.group(2)
            elif "<!--" in lines[k] and "example" in lines[k]:
                raise SystemExit(f"{path}:{k + 1}: unreadable example marker: {lines[k].strip()}")
        following = fences[n + 1][2] if n + 1 < len(fences) else None
        found.append(Block(path, start + 1, text, kind, reason, following))
    return found


def commands_of(text):
    """The block's command lines, continuation lines joined, comments and
    `$ ` prompts dropped."""
    out, cur = [], ""
    for raw in text.split("\n"):
        line = raw.rstrip()
        if line.startswith("$ "):
            line = line[2:]
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.strip().startswith("#"):
            out.append(cur.strip())
        cur = ""
    return out


def harness_argv(line):
    """The harness arguments of a command line, or None when it is not one."""
    if re.search(r"[|;&<>`]|\$\(", line.split(" #")[0]):
        return None
    words = shlex.split(line, comments=True)
    for prefix in HARNESS_PREFIXES:
        if words[:len(prefix)] == prefix:
            return words[len(prefix):]
    return None


def set_option(argv, name, value=None):
    """argv with `name` (and its value) present once: added or replaced."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == name:
            i += 1 if value is None else 2
            continue
        if value is not None and argv[i].startswith(name + "="):
            i += 1
            continue
        out.append(argv[i])
        i += 1
    return out + ([name] if value is None else [name, value])


def option(argv, name):
    for i, w in enumerate(argv):
        if w == name and i + 1 < len(argv):
            return argv[i + 1]
    return None


def shorten(argv, tmp):
    """The short, virtual-clock form of a harness command, and the file it
    names (for the validate fallback)."""
    argv = [w.replace("reports/", os.path.join(tmp, "reports") + "/", 1) if w.startswith("reports/") else w
            for w in argv]
    sub = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    rest = argv[1:] if sub else argv
    if sub == "campaign" and rest and rest[0] in ("merge", "compare", "table"):
        sub, rest = f"campaign {rest[0]}", rest[1:]
    positional = [w for w in rest if not w.startswith("-")]
    file = next((w for w in positional if w.endswith((".yaml", ".yml"))), None)
    if sub in (None, "campaign", "sweep", "threshold", "ablate"):
        if sub in (None, "campaign", "ablate"):
            rest = set_option(rest, "--quick")
        rest = set_option(rest, "--clock", "virtual")
        rest = set_option(rest, "--out", os.path.join(tmp, "reports"))
    if sub == "campaign":
        if option(rest, "--seeds"):
            rest = set_option(rest, "--seeds", "1..5")
        if option(rest, "--check-real"):
            rest = set_option(rest, "--check-real", "1")
    if sub == "sweep":
        load = option(rest, "--load")
        if load and ":" in load:
            rest = set_option(rest, "--load", load.rsplit(":", 1)[0] + ":2")
        trig = option(rest, "--trigger")
        if trig and re.search(r":\d+$", trig):
            rest = set_option(rest, "--trigger", trig.rsplit(":", 1)[0] + ":2")
        rest = set_option(rest, "--runs-per-cell", "1")
        rest = set_option(rest, "--force")
    if sub == "threshold":
        rest = set_option(rest, "--runs-per-probe", "1")
        rest = set_option(rest, "--resolution", "0.4")
    if sub in ("campaign merge", "render") and option(rest, "--out"):
        rest = set_option(rest, "--out", tempfile.mkdtemp(dir=tmp))
    head = sub.split(" ") if sub else []
    return head + rest, file


def run(cmd, timeout, cwd=ROOT):
    """(exit code or None on timeout, stdout, stderr, seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return None, out, "timed out", time.monotonic() - t0


def normalise(text):
    """Output with what changes from run to run masked: run ids, report
    folders and wall times."""
    text = re.sub(r"\d{8}T\d{6}Z", "RUNID", text)
    text = re.sub(r"report: \S*?([\w.-]+/RUNID)", r"report: REPORTS/\1", text)
    text = re.sub(r"in [\d.]+ s of wall time \([\d.]+x\)", "in WALL s of wall time (Nx)", text)
    return [line.rstrip() for line in text.strip().split("\n")]


class Checker:
    def __init__(self, harness, timeout):
        self.harness, self.timeout = harness, timeout
        self.tmp = tempfile.mkdtemp(prefix="examples-")
        self.counts = {"run": 0, "validated": 0, "skipped": 0, "failed": 0}

    def fail(self, block, why):
        self.counts["failed"] += 1
        print(f"FAIL {block.where()}: {why}")

    def check(self, block):
        if block.kind == "skip":
            if not block.reason:
                return self.fail(block, "a skipped example must say why: <!-- example: skip (REASON) -->")
            self.counts["skipped"] += 1
            return print(f"skip {block.where()}: {block.reason}")
        if block.kind == "shell":
            return self.shell(block)
        for line in commands_of(block.text):
            argv = harness_argv(line)
            if argv is None:
                return self.fail(block, f"not a harness command: `{line}` (mark the block shell or skip, with the reason)")
            templates = [w for w in argv if PLACEHOLDER.match(w)]
            if templates:
                return self.fail(block, f"`{line}` is a template ({', '.join(templates)}): write a command that runs, or mark it skip")
            if not self.command(block, line, argv):
                return
        return None

    def command(self, block, line, argv):
        if block.kind == "validate":
            files = [w for w in argv if w.endswith((".yaml", ".yml"))]
            return all(self.validate(block, line, f, block.reason or "marked validate") for f in files) if files \
                else self.fail(block, f"`{line}` names no experiment file to validate")
        if argv and argv[0] == "bench":
            return self.fail(block, f"`{line}` measures the machine for minutes: mark it skip")
        if block.kind == "output":
            cmd = set_option(list(argv), "--out", os.path.join(self.tmp, "reports"))
            code, out, err, secs = run([self.harness] + cmd, self.timeout)
        else:
            cmd, file = shorten(argv, self.tmp)
            code, out, err, secs = run([self.harness] + cmd, self.timeout)
            if code == 2 and REFUSED_VIRTUAL in err and "alerts:" in err and "--without-alerts" not in cmd:
                # Alert rules need a real Prometheus: the rest still runs without them
                # (the alert expectations then read n/a, so exit 1 is accepted).
                cmd = set_option(cmd, "--without-alerts")
                code, out, err, secs = run([self.harness] + cmd, self.timeout)
            if code == 2 and REFUSED_VIRTUAL in err and file:
                refusal = err.strip().split("\n")[-1]
                return self.validate(block, line, file, f"the virtual clock refuses it: {refusal}")
        accepted = {0, 1} if (block.kind == "exit 1" or "--without-alerts" in cmd) else {0}
        if code not in accepted:
            why = "timed out after %d s" % self.timeout if code is None else f"exit {code}"
            tail = "\n      ".join((err or out).strip().split("\n")[-5:])
            return self.fail(block, f"`{line}` ({' '.join(cmd)}): {why}\n      {tail}")
        if code == 1 and block.kind != "exit 1":
            # Accepted only for the alert rules left out: any other failed
            # expectation of a run is a failure of the example.
            other = [l.strip() for l in (out + err).split("\n")
                     if "[FAIL]" in l and "--without-alerts" not in l]
            if other:
                return self.fail(block, f"`{line}`: an expectation failed that is not an alert's:\n      {other[0][:300]}")
        if block.kind == "output" and not self.same_output(block, out + err):
            return False
        self.counts["run"] += 1
        shown = "" if cmd == argv else f" as `harness {' '.join(cmd)}`"
        print(f"ok   {block.where()}: `{line}` ran{shown} (exit {code}, {secs:.1f} s)")
        return True

    def same_output(self, block, out):
        if block.following is None:
            self.fail(block, "marked output, but no fenced block follows")
            return False
        want, got = normalise(block.following), normalise(out)
        if want != got:
            diff = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
            w = want[diff] if diff < len(want) else "(end)"
            g = got[diff] if diff < len(got) else "(end)"
            self.fail(block, f"the output shown differs from what the command prints, line {diff + 1}:\n"
                             f"      shown:   {w[:200]}\n      printed: {g[:200]}")
            return False
        return True

    def validate(self, block, line, file, why):
        code, out, err, _ = run([self.harness, "validate", file], self.timeout)
        if code != 0:
            tail = "\n      ".join((err or out).strip().split("\n")[-5:])
            return self.fail(block, f"`{line}`: harness validate {file}: exit {code}\n      {tail}")
        self.counts["validated"] += 1
        print(f"ok   {block.where()}: `{line}` validated ({why})")
        return True

    def shell(self, block):
        bindir = tempfile.mkdtemp(dir=self.tmp)
        os.symlink(self.harness, os.path.join(bindir, "harness"))
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        t0 = time.monotonic()
        try:
            p = subprocess.run(["bash", "-euo", "pipefail", "-c", block.text], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return self.fail(block, f"timed out after {self.timeout} s")
        if p.returncode != 0:
            tail = "\n      ".join((p.stderr or p.stdout).strip().split("\n")[-5:])
            return self.fail(block, f"exit {p.returncode}\n      {tail}")
        self.counts["run"] += 1
        print(f"ok   {block.where()}: shell block ran ({time.monotonic() - t0:.1f} s)")
        return None


def default_harness():
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    return os.path.join(target, "debug", "harness")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="Markdown files (default: README.md, docs/**/*.md, experiments/*.md)")
    ap.add_argument("--harness", default=default_harness(),
                    help="the binary (default: $CARGO_TARGET_DIR or target/, then debug/harness)")
    ap.add_argument("--timeout", type=int, default=180, help="seconds per command")
    args = ap.parse_args()
    harness = os.path.abspath(args.harness)
    if not os.access(harness, os.X_OK):
        print(f"examples: no harness binary at {harness} (cargo build -p harness)", file=sys.stderr)
        return 2
    files = args.files or sorted({f for pat in DEFAULT_FILES for f in glob.glob(os.path.join(ROOT, pat), recursive=True)})
    checker = Checker(harness, args.timeout)
    try:
        for path in files:
            for block in blocks_of(os.path.abspath(path)):
                checker.check(block)
    finally:
        shutil.rmtree(checker.tmp, ignore_errors=True)
    c = checker.counts
    print(f"examples: {c['run']} run, {c['validated']} validated, {c['skipped']} skipped, {c['failed']} failed")
    return 1 if c["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
