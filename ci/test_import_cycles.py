#!/usr/bin/env python3
"""ci/import_cycles.py on made-up crates: a cycle added on purpose is found
(directly, through a third sibling, through a `use` group, a `super::` path
and an inline path), and what the layering allows is not flagged. Standard
library only (unittest)."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import import_cycles  # noqa: E402


def crate(files):
    """A src/ folder holding `files` ({relative path: text})."""
    root = tempfile.mkdtemp()
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return root


def cycles_of(files):
    c = import_cycles.Crate(crate(files))
    return import_cycles.cycles(import_cycles.sibling_edges(c))


class Cycles(unittest.TestCase):
    def test_two_siblings_using_each_other(self):
        found = cycles_of({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "pub struct B;\nfn f() { let _ = crate::a::A; }\n",
        })
        self.assertEqual(found, [((), ["a", "b"])])

    def test_a_cycle_through_a_third_module_and_a_group(self):
        found = cycles_of({
            "lib.rs": "mod a;\nmod b;\nmod c;\n",
            "a.rs": "use crate::{b::B, c};\n",
            "b.rs": "use crate::c::C;\npub struct B;\n",
            "c.rs": "pub struct C;\n// crate::a::A in a comment is not an edge\nuse crate::a;\n",
        })
        self.assertEqual(found, [((), ["a", "b", "c"])])

    def test_a_cycle_between_nested_siblings_by_super(self):
        found = cycles_of({
            "lib.rs": "mod run;\n",
            "run/mod.rs": "mod x;\nmod y;\n",
            "run/x.rs": "use super::y::Y;\npub struct X;\n",
            "run/y.rs": "pub struct Y;\nfn f(_: super::x::X) {}\n",
        })
        self.assertEqual(found, [(("run",), ["x", "y"])])

    def test_layers_children_and_parents_are_allowed(self):
        found = cycles_of({
            "lib.rs": "mod base;\nmod top;\n",
            "base.rs": "pub struct Base;\n",
            "top/mod.rs": "mod part;\nuse crate::base::Base;\npub struct Shared;\nfn f() { part::g(); }\n",
            "top/part.rs": "use super::Shared;\nuse crate::base::Base;\npub fn g() {}\n",
        })
        self.assertEqual(found, [])

    def test_the_command_exits_1_on_a_cycle(self):
        root = crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\n",
            "b.rs": "use crate::a::A;\n",
        })
        r = subprocess.run([sys.executable, os.path.join(HERE, "import_cycles.py"), root],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("cycle under crate: a ↔ b", r.stdout)


if __name__ == "__main__":
    unittest.main()
