#!/usr/bin/env python3
"""Every path ARCHITECTURE.md names exists: fails (exit 1) on a stale one.

Two kinds of mention are checked against the files git tracks:

- the code map's trees (a ```text block whose first line is a folder,
  `harness/src/`): each line `├ folder/  names...` names files and folders
  that must exist under that folder (at any depth, so `journey/` and
  `async_client.rs` below it both count);
- every `backticked` token elsewhere that looks like a path (it holds a
  `/`, or ends in .rs, .md, .py, .sh, .yaml, .json, .toml, .wgsl): some
  tracked path must end with it.

    python3 ci/architecture_paths.py [FILE]

Standard library only.
"""
import re
import subprocess
import sys

SUFFIXES = (".rs", ".md", ".py", ".sh", ".yaml", ".yml", ".json", ".toml", ".wgsl", ".cfg", ".conf")
NAME = re.compile(r"[\w.-]+(?:/[\w.-]+)*/?")


def tracked():
    out = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout
    files = set(out.split())
    dirs = set()
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]) + "/")
    return files, dirs


# Files a run or campaign writes into its report folder: named by the
# architecture, never in the repository.
WRITTEN = {"run.json", "summary.json", "context.json", "campaign.json", "plan.json",
           "timeseries.csv", "junit.xml", "index.html", "campaign.html"}


def looks_like_path(token):
    if token in WRITTEN or re.search(r"\b[A-Z]{2,}\b", token) or token[:1].isupper():
        return False
    if " " in token or token.startswith(("-", "http", "$")) or "*" in token or "{" in token:
        return False
    if "::" in token or "(" in token or "=" in token or ":" in token:
        return False
    return "/" in token.strip("/") or token.endswith(SUFFIXES) or (token.endswith("/") and len(token) > 1)


def exists(token, files, dirs, under=""):
    want = token.rstrip("/") + ("/" if token.endswith("/") else "")
    pool = dirs if want.endswith("/") else files
    return any(p.startswith(under) and (p == under + want or p.endswith("/" + want)) for p in pool)


def tree_mentions(text):
    """(line number, folder, name) for each name on a code map tree line."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("```text") and i + 1 < len(lines) and re.match(r"^[\w-]+(/[\w-]+)*/\s", lines[i + 1] + " "):
            root = lines[i + 1].split()[0]
            j = i + 2
            while j < len(lines) and not lines[j].startswith("```"):
                m = re.match(r"^[├└│ ]+\s*([\w-]+/)\s+(.*)$", lines[j])
                if m:
                    folder = root + m.group(1)
                    out.append((j + 1, root, m.group(1)))
                    for name in re.findall(r"(?<![\w/.])[a-z_][\w-]*(?:/[\w-]+)*(?:\.rs|/)", m.group(2)):
                        out.append((j + 1, folder, name))
                j += 1
            i = j
        i += 1
    return out


def main(args):
    path = args[0] if args else "ARCHITECTURE.md"
    text = open(path, encoding="utf-8").read()
    files, dirs = tracked()
    stale = []
    for line, folder, name in tree_mentions(text):
        if not exists(name, files, dirs, under=folder):
            stale.append(f"{path}:{line}: {folder}{name} (code map) does not exist")
    blocks = [(m.start(), m.end()) for m in re.finditer(r"```text\n.*?```", text, flags=re.S)]
    for m in re.finditer(r"`([^`\n]+)`", text):
        token = m.group(1)
        if any(a <= m.start() < b for a, b in blocks):
            continue
        if looks_like_path(token) and not exists(token, files, dirs):
            line = text[: m.start()].count("\n") + 1
            stale.append(f"{path}:{line}: `{token}` names no tracked file or folder")
    for s in stale:
        print(s)
    print(f"{path}: {len(stale)} stale paths")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
