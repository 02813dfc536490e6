#!/usr/bin/env python3
"""Import cycles between the modules of a crate: fails (exit 1) on any.

A module may use its children and its own ancestors' items, but two siblings
(modules with the same parent) must not use each other, directly or through
other siblings: at every level of the module tree the graph of "a sibling's
code names a path into another sibling" is acyclic. That is what lets a
reader take the tree from its leaves up. An edge is every `crate::`,
`super::` and `self::` path in the code (use statements, brace groups and
paths written inline), comments left out. An item defined in an ancestor's
own file (`mod.rs`) is the ancestor's, not a sibling's.

    python3 ci/import_cycles.py                  # every crate of the workspace
    python3 ci/import_cycles.py harness/src      # any crate's src/

Standard library only.
"""
import os
import re
import sys

CRATES = [
    "harness/src",
    "crates/run-report/src",
    "crates/retry-policy/src",
    "crates/gpu-executor/src",
    "system-under-test/src",
]

MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
PATH = re.compile(r"\b((?:crate|super|self)(?:\s*::\s*(?:\w+|\{))+)")


def strip_comments(text):
    """The code without // and /* */ comments (string contents kept: a path
    inside a string literal is rare and harmless)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


class Crate:
    def __init__(self, src):
        self.src = src
        self.children = {}  # module path (tuple) -> set of child names
        self.files = {}  # module path -> file
        root = next(
            os.path.join(src, f) for f in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, f))
        )
        self._walk((), root)
        # main.rs beside lib.rs is a crate of its own (the binary): not walked.

    def _walk(self, path, file):
        self.files[path] = file
        self.children[path] = set()
        text = strip_comments(open(file, encoding="utf-8").read())
        base = os.path.dirname(file)
        stem = os.path.splitext(os.path.basename(file))[0]
        own_dir = base if stem in ("lib", "main", "mod") else os.path.join(base, stem)
        for name in MOD_DECL.findall(text):
            for cand in (os.path.join(own_dir, name + ".rs"), os.path.join(own_dir, name, "mod.rs")):
                if os.path.exists(cand):
                    self.children[path].add(name)
                    self._walk(path + (name,), cand)
                    break

    def resolve(self, here, segments):
        """The deepest module named by a path written in module `here`."""
        if segments[0] == "crate":
            mod, rest = (), segments[1:]
        else:
            mod = here
            rest = segments
            while rest and rest[0] in ("super", "self"):
                if rest[0] == "super":
                    mod = mod[:-1]
                rest = rest[1:]
        for seg in rest:
            if seg in self.children.get(mod, ()):
                mod = mod + (seg,)
            else:
                break
        return mod


def expand(path_text):
    """`crate::a::{b, c::{d, e}}` → [[crate,a,b],[crate,a,c,d],[crate,a,c,e]]
    (only the leading segments matter, so a group's members are read to
    their first segment's depth)."""
    path_text = re.sub(r"\s+", "", path_text)
    if "{" not in path_text:
        return [[s for s in path_text.split("::") if s]]
    head, _, rest = path_text.partition("{")
    prefix = [s for s in head.split("::") if s]
    # split rest at top-level commas until the matching brace
    depth, part, parts = 0, "", []
    for ch in rest:
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
        else:
            part += ch
    parts.append(part)
    out = []
    for p in parts:
        if not p:
            continue
        for tail in expand(p):
            out.append(prefix + tail)
    return out


def use_paths(text):
    """Every path of the code that starts at crate, super or self."""
    paths = []
    for m in re.finditer(r"\buse\s+((?:crate|super|self)[^;]*);", text):
        paths.extend(expand(m.group(1)))
    no_use = re.sub(r"\buse\s+[^;]*;", "", text)
    for m in PATH.finditer(no_use):
        paths.append([s for s in re.sub(r"\s+", "", m.group(1)).rstrip("{").split("::") if s])
    return paths


def sibling_edges(crate):
    """(parent, from child, to child) for every path between two siblings."""
    edges = {}
    for here, file in crate.files.items():
        text = strip_comments(open(file, encoding="utf-8").read())
        for segs in use_paths(text):
            target = crate.resolve(here, segs)
            common = 0
            while common < min(len(here), len(target)) and here[common] == target[common]:
                common += 1
            if common == len(here) or common == len(target):
                continue  # into a descendant, or to an ancestor's own items
            key = (here[:common], here[common], target[common])
            edges.setdefault(key, set()).add(f"{file} → {'::'.join(segs)}")
    return edges


def cycles(edges):
    """Strongly connected components of more than one module, per parent."""
    by_parent = {}
    for (parent, a, b) in edges:
        by_parent.setdefault(parent, {}).setdefault(a, set()).add(b)
    found = []
    for parent, graph in by_parent.items():
        index, low, stack, on, counter = {}, {}, [], set(), [0]

        def strong(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in graph.get(v, ()):
                if w not in index:
                    strong(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append((parent, sorted(comp)))

        for v in list(graph):
            if v not in index:
                strong(v)
    return found


def main(args):
    sys.setrecursionlimit(10000)
    total = 0
    for src in args or CRATES:
        crate = Crate(src)
        edges = sibling_edges(crate)
        found = cycles(edges)
        total += len(found)
        print(f"{src}: {len(crate.files)} modules, {len(edges)} sibling edges, {len(found)} cycles")
        for parent, comp in found:
            where = "::".join(("crate",) + parent)
            print(f"  cycle under {where}: {' ↔ '.join(comp)}")
            members = set(comp)
            for (p, a, b), sites in sorted(edges.items()):
                if p == parent and a in members and b in members:
                    print(f"    {a} → {b}: {sorted(sites)[0]}" + (f" (+{len(sites) - 1})" if len(sites) > 1 else ""))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
