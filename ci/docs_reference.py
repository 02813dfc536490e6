#!/usr/bin/env python3
"""Writes the generated reference pages in docs/reference/: experiment-file.md
from experiments/experiment.schema.json, and cli.md, metrics.md and verdicts.md
from the code (`harness reference cli|metrics|verdicts`: clap's command tree,
the metric catalogue, the verdict classes and their rule). The harness binary
is $HARNESS_BIN, else $CARGO_TARGET_DIR/debug/harness, else
target/debug/harness (build it first).

The schema is what `harness schema` prints, derived from the parser's own
types, so this page cannot say anything the parser does not accept. The page
is organised by key path (`system.pool`, `workload.client.retry`,
`timeline[].fault`), never by the parser's type names: each shape is
documented once, at the shortest path that uses it, with "also at" for the
others. Run it after the schema changes; `--check` (in .ci/run) fails when
the page is stale or when a key has no description. Standard library only.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "experiments" / "experiment.schema.json"
PAGE = ROOT / "docs" / "reference" / "experiment-file.md"

# --- the experiment file's schema, walked by key path ----------------------


def one_line(text):
    return " ".join((text or "").split()).replace("|", "\\|")


def def_name(s):
    """The definition a subschema refers to, if any."""
    ref = s.get("$ref", "")
    return ref.rsplit("/", 1)[-1] if ref.startswith("#/$defs/") else None


def non_null(alternatives):
    return [x for x in alternatives if x.get("type") != "null"]


def union_of(d):
    return d.get("oneOf") or d.get("anyOf") or []


def tagged_key(alt):
    """The key of an externally tagged alternative (`{ key: ... }`), if it is one."""
    props = alt.get("properties", {})
    if alt.get("type") == "object" and len(props) == 1 and alt.get("required") == list(props):
        return next(iter(props))
    return None


def flat_alternatives(defs, d):
    """A union's alternatives, unions it refers to expanded in place, as
    `(group description or None, alternative)`."""
    out = []
    for alt in union_of(d):
        inner = defs.get(def_name(alt) or "", {})
        if def_name(alt) and union_of(inner) and "properties" not in inner:
            out += [(inner.get("description"), a) for _, a in flat_alternatives(defs, inner)]
        else:
            out.append((None, alt))
    return out


def join(parent, key):
    if not parent or key.startswith("[]"):
        return parent + key
    return f"{parent}.{key}"


def depth(path):
    return path.count(".") + path.count("[]")


class Shapes:
    """Every definition the file's keys use, with the paths that use it:
    each definition's body is walked once, noting which definitions it uses
    at which relative path; a definition's home is then the shortest path
    from the top (between equals the last in alphabetical order:
    `workload.client.retry` before `system.gateway.retry`)."""

    def __init__(self, schema):
        self.defs = schema.get("$defs", {})
        self.uses = {}  # definition -> [(the definition using it or None, relative path)]
        self.expanded = set()  # unions documented inside another union
        self.walk_body(schema, None, "")
        self.homes = {}
        for _ in range(len(self.defs) + 1):
            for name, uses in self.uses.items():
                known = [join(self.home_of(u), rel) for u, rel in uses if self.home_of(u) is not None]
                if known:
                    shortest = min(depth(p) for p in known)
                    self.homes[name] = max(p for p in known if depth(p) == shortest)
        self.paths = {
            name: sorted({join(self.home_of(u), rel) for u, rel in uses}, key=path_order)
            for name, uses in self.uses.items()
        }

    def home_of(self, name):
        return "" if name is None else self.homes.get(name)

    def use(self, s, owner, rel):
        """`s` is used at `rel` in `owner`'s body."""
        name = def_name(s)
        if name:
            first = name not in self.uses
            if (owner, rel) not in self.uses.setdefault(name, []):
                self.uses[name].append((owner, rel))
            if first:
                self.walk_body(self.defs[name], name, "")
            return
        if len(non_null(union_of(s))) == 1 and "properties" not in s:
            return self.use(non_null(union_of(s))[0], owner, rel)  # an optional key
        self.walk_body(s, owner, rel)

    def walk_body(self, s, owner, rel):
        for alt in non_null(union_of(s)):
            inner = self.defs.get(def_name(alt) or "", {})
            if union_of(inner) and "properties" not in inner:
                self.expanded.add(def_name(alt))  # a union of unions: one list here
                for _, a in flat_alternatives(self.defs, inner):
                    self.walk_alternative(a, owner, rel)
            elif def_name(alt):
                self.use(alt, owner, rel)
            else:
                self.walk_alternative(alt, owner, rel)
        for key, p in sorted(s.get("properties", {}).items()):
            self.use(p, owner, join(rel, key))
        if isinstance(s.get("items"), dict):
            self.use(s["items"], owner, rel + "[]")
        if isinstance(s.get("additionalProperties"), dict):
            self.use(s["additionalProperties"], owner, join(rel, "*"))

    def walk_alternative(self, alt, owner, rel):
        key = tagged_key(alt)
        if key:
            self.use(alt["properties"][key], owner, join(rel, key))
        else:
            self.walk_body(alt, owner, rel)

    def home(self, name):
        return self.homes[name]

    def documented(self, name):
        """Whether a definition gets a section of its own: an object or a
        union (a plain list of values is written where it is used; a union
        expanded into another is documented there)."""
        d = self.defs[name]
        if name not in self.paths or name in self.expanded:
            return False
        return "properties" in d or bool(union_of(d))


def anchor(path):
    """A section's anchor, from its path: `timeline[].fault` -> `timeline-fault`."""
    return re.sub(r"[^a-z0-9]+", "-", path.lower().replace("*", "name").replace("[]", "")).strip("-")


def type_of(shapes, s):
    """A key's type in words, with links to the sections it names."""
    name = def_name(s)
    if name:
        d = shapes.defs[name]
        if shapes.documented(name):
            home = shapes.home(name)
            kind = "object" if "properties" in d else "one of"
            return f"{kind}, see [`{home}`](#{anchor(home)})"
        return type_of(shapes, d)
    alts = non_null(union_of(s))
    if alts:
        return " or ".join(t for t in (type_of(shapes, x) for x in alts) if t)
    if "const" in s:
        return f"`{s['const']}`"
    if "enum" in s:
        return " \\| ".join(f"`{v}`" for v in s["enum"])
    t = s.get("type")
    if isinstance(t, list):
        t = " or ".join(x for x in t if x != "null")
    if t == "array":
        return f"list of {type_of(shapes, s.get('items', {}))}"
    if t == "object" and isinstance(s.get("additionalProperties"), dict):
        return f"map of name → {type_of(shapes, s['additionalProperties'])}"
    return t or "any"


def yaml_value(v):
    """A default as it would be written in the file (YAML flow style)."""
    if isinstance(v, str):
        return v if v else '""'
    if isinstance(v, list):
        return "[" + ", ".join(yaml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{k}: {yaml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(v)


def default_of(shapes, s):
    """A key's default in words: a mapping whose keys have defaults of their
    own is "each key's own", with those it sets otherwise."""
    if "default" not in s or s["default"] is None:
        return ""
    d = s["default"]
    props = shapes.defs.get(def_name(s) or "", {}).get("properties", {})
    if isinstance(d, dict) and d and props:
        differ = {k: v for k, v in d.items() if props.get(k, {}).get("default") != v}
        but = ", ".join(f"`{k}: {yaml_value(v)}`" for k, v in differ.items())
        return "each key's own" + (f", but {but}" if but else "")
    text = yaml_value(d)
    return f"`{text}`" if len(text) <= 60 else "(see `harness schema`)"


def properties_table(shapes, s):
    required = s.get("required", ())
    rows = ["| key | type | default | what it is |", "|---|---|---|---|"]
    for key, p in sorted(s.get("properties", {}).items()):
        req = " (required)" if key in required else ""
        rows.append(
            f"| `{key}`{req} | {type_of(shapes, p)} | {default_of(shapes, p)} | {one_line(p.get('description'))} |"
        )
    return rows


def alternative(shapes, alt):
    """One alternative of a union: a line, and its fields as a nested list."""
    desc = one_line(alt.get("description"))
    key = tagged_key(alt)
    fields = []
    if "const" in alt:
        head = f"`{alt['const']}`"
    elif "enum" in alt:
        head = ", ".join(f"`{v}`" for v in alt["enum"])
    elif key:
        inner = alt["properties"][key]
        if "properties" in inner:
            head = f"`{key}: {{ {', '.join(inner['properties'])} }}`"
            required = inner.get("required", ())
            for k, p in sorted(inner["properties"].items()):
                req = " (required)" if k in required else ""
                dflt = f", default {default_of(shapes, p)}" if default_of(shapes, p) else ""
                fields.append(
                    f"  - `{k}`{req}: {type_of(shapes, p)}{dflt}. {one_line(p.get('description'))}".rstrip()
                )
        else:
            head = f"`{key}`: {type_of(shapes, inner)}"
    else:
        head = type_of(shapes, alt)
    return [f"- {head}" + (f": {desc}" if desc else "")] + fields


def section(shapes, name):
    d = shapes.defs[name]
    home = shapes.home(name)
    out = [f'<a id="{anchor(home)}"></a>', "", f"### `{home}`", ""]
    others = [p for p in shapes.paths[name] if p != home]
    if d.get("description"):
        out += [" ".join(d["description"].split()), ""]
    if others:
        out += ["Also at " + ", ".join(f"`{p}`" for p in others) + ".", ""]
    if "properties" in d:
        out += properties_table(shapes, d) + [""]
    group = None
    alts = flat_alternatives(shapes.defs, d)
    if alts:
        out += ["One of:", ""]
    for g, alt in alts:
        if g != group and g:
            out += ([] if out[-1] == "" else [""]) + [f"*{one_line(g)}*", ""]
        group = g
        out += alternative(shapes, alt)
    if alts:
        out.append("")
    if "enum" in d and "properties" not in d:
        out += ["One of: " + ", ".join(f"`{v}`" for v in d["enum"]), ""]
    return out


def path_order(path):
    """Sorts paths as a tree: `timeline[]` before `timeline[].fault`."""
    return [part for part in re.split(r"(\.|\[\])", path) if part not in (".", "")]


def experiment_file_page():
    s = json.loads(SCHEMA.read_text())
    shapes = Shapes(s)
    out = [
        "# The experiment file",
        "",
        "<!-- Generated by `python3 ci/docs_reference.py` from",
        "     experiments/experiment.schema.json (`harness schema`). Do not edit. -->",
        "",
        "Every key an experiment file may hold, generated from its JSON Schema",
        "([experiments/experiment.schema.json](../../experiments/experiment.schema.json)),",
        "which `harness schema` derives from the parser's own types. A key that is",
        "not listed here is an error. Each section is headed by the key path where",
        "it is used (`[]`: any item of a list, `*`: any name of a map). Durations",
        "are strings such as `250ms`, `3s`, `2m`. Where an optional key's default",
        "is blank, its description says what its absence means.",
        "`harness validate FILE` checks the semantics the schema cannot (a fault",
        "after the end, a zone that does not exist, an unknown metric).",
        "Expectation keys (`expect:`) name the metrics of",
        "[the metric catalogue](../../crates/run-report/src/metrics/catalogue.rs).",
        "",
        "## Top level",
        "",
    ]
    out += properties_table(shapes, s)
    out += ["", "## Sections", ""]
    names = [n for n in shapes.paths if shapes.documented(n)]
    for name in sorted(names, key=lambda n: path_order(shapes.home(n))):
        out += section(shapes, name)
    text = "\n".join(out).rstrip() + "\n"
    anchors = [anchor(shapes.home(n)) for n in names]
    assert len(anchors) == len(set(anchors)), f"two sections share an anchor: {sorted(anchors)}"
    return text


def undescribed_keys():
    """Every key of the schema without a description, as `where.key`. The
    key of an externally tagged alternative (`{ zone_fail: {...} }`) is
    described by the alternative's own description."""
    s = json.loads(SCHEMA.read_text())
    missing = []

    def walk(node, where, described_by_parent=False):
        if isinstance(node, list):
            for x in node:
                walk(x, where)
            return
        if not isinstance(node, dict):
            return
        key = tagged_key(node)
        for k, p in node.get("properties", {}).items():
            inherited = k == key and bool(node.get("description"))
            if not (p.get("description") or "").strip() and not inherited:
                missing.append(f"{where}.{k}")
            walk(p, f"{where}.{k}")
        for k, v in node.items():
            if k == "$defs":
                for name, d in v.items():
                    walk(d, name)
            elif k != "properties":
                walk(v, where)

    walk(s, "(top level)")
    return missing


def experiment_file(check):
    """Writes the page, or with `check` says whether it is current and
    every key is described. True when all is well."""
    text = experiment_file_page()
    ok = True
    missing = undescribed_keys()
    if missing:
        print(f"{len(missing)} keys of the experiment file have no description "
              "(a doc comment on the field):", file=sys.stderr)
        homes = Shapes(json.loads(SCHEMA.read_text())).homes
        for m in missing:
            name, _, key = m.partition(".")
            where = f" (at {join(homes[name], key)})" if name in homes else ""
            print(f"  {m}{where}", file=sys.stderr)
        ok = not check
    if re.search(r"\bRaw[A-Z]", text):
        print(f"{PAGE.relative_to(ROOT)} names a parser type (Raw...)", file=sys.stderr)
        ok = False
    return write_or_check(PAGE, text, check) and ok


def write_or_check(path, text, check):
    """Writes the page, or with `check` says whether the committed one is
    current. True when all is well."""
    if not check:
        path.write_text(text)
        return True
    if path.exists() and path.read_text() == text:
        return True
    print(f"{path.relative_to(ROOT)} is stale: run python3 ci/docs_reference.py", file=sys.stderr)
    return False


CODE_PAGES = ["cli", "metrics", "verdicts"]


def harness_bin():
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    path = Path(os.environ.get("HARNESS_BIN") or target / "debug" / "harness")
    if not path.is_file():
        sys.exit(f"docs_reference: no harness binary at {path}: build it (cargo build -p harness) or set HARNESS_BIN")
    return path


def code_page(name):
    """The Markdown `harness reference NAME` prints."""
    out = subprocess.run([str(harness_bin()), "reference", name], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"docs_reference: harness reference {name} failed: {out.stderr.strip()}")
    return out.stdout


def code_pages(check):
    """Writes the pages made by the code, or with `check` says whether each
    is current. True when all is well."""
    ok = True
    for name in CODE_PAGES:
        path = ROOT / "docs" / "reference" / f"{name}.md"
        ok = write_or_check(path, code_page(name), check) and ok
    return ok


def main():
    check = "--check" in sys.argv
    ok = experiment_file(check)
    ok = code_pages(check) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
