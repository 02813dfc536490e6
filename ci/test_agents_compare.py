#!/usr/bin/env python3
"""Tests of ci/agents_compare.py on made-up run folders: the invariants it
must refuse (different document ids, a document not accounted for, a run
that did not finish) and the statistics it prints. Standard library only;
`.ci/run` runs it.

    python3 ci/test_agents_compare.py
"""

import contextlib
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agents_compare  # noqa: E402


def variant(name, peak, digest="d1", accounted=True, waves=1, verdict="recovered"):
    return {
        "name": name,
        "verdict": {"verdict": verdict},
        "waves": [{}] * waves,
        "metrics": {"peak_failure_ratio": peak},
        "integrity": {
            "submitted": 10,
            "submitted_digest": digest,
            "accounted": accounted,
            "incorrect_results": 0,
            "problems": [] if accounted else ["1 document pending"],
        },
    }


class AgentsCompare(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, folder, *variants):
        # As a run writes it: below the experiment's folder and the run's id.
        d = self.root / folder / "exp" / "run-1"
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps({"variants": list(variants)}))

    def compare(self):
        out = io.StringIO()
        sys.argv = ["agents_compare.py", str(self.root)]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = agents_compare.main()
        return code, out.getvalue()

    def test_matching_runs_pass_and_report_both_spreads(self):
        for i, (one, three) in enumerate([(0.80, 0.84), (0.78, 0.79), (0.82, 0.75)], 1):
            self.write(f"agents1-{i}", variant("v", one))
            self.write(f"agents3-{i}", variant("v", three))
        code, out = self.compare()
        self.assertEqual(code, 0, out)
        self.assertIn("3 pairs, differ by 0.010-0.070, within 0.05: 2 of 3", out)
        self.assertIn("1 agent(s) among themselves: 3 pairs, differ by 0.020-0.040", out)
        self.assertIn("mean peak with 3 minus with 1: -0.007", out)
        self.assertIn("every run: recovered, 1 wave(s)", out)

    def test_whole_run_agreement_counts_every_pair(self):
        # Two variants; run 3 of 1 agent has another wave count, so it agrees with no one.
        runs = {
            "agents1-1": (0.80, 1), "agents3-1": (0.83, 1),
            "agents1-2": (0.82, 1), "agents3-2": (0.90, 1),
            "agents1-3": (0.80, 2), "agents3-3": (0.84, 1),
        }
        for folder, (peak, waves) in runs.items():
            self.write(folder, variant("a", peak, waves=waves), variant("b", 0.12, waves=0))
        code, out = self.compare()
        self.assertEqual(code, 0, out)
        # 1-1 and 1-2 agree with 3-1 and 3-3; 3-2 (0.90) with none of them.
        self.assertIn("1 vs 3 agents: 4 of 9 (run one after the other: 1 of 3)", out)
        self.assertIn("1 vs 1 agent(s): 1 of 3", out)
        self.assertIn("3 vs 3 agent(s): 1 of 3", out)

    def test_different_document_ids_fail(self):
        self.write("agents1-1", variant("v", 0.8, digest="d1"))
        self.write("agents3-1", variant("v", 0.8, digest="d2"))
        code, out = self.compare()
        self.assertEqual(code, 1)
        self.assertIn("different document ids", out)

    def test_a_run_missing_a_variant_fails_with_its_name(self):
        self.write("agents1-1", variant("a", 0.8), variant("b", 0.1))
        self.write("agents3-1", variant("a", 0.8))
        code, out = self.compare()
        self.assertEqual(code, 1)
        self.assertIn("agents3-1: no variant b", out)

    def test_a_document_not_accounted_for_fails(self):
        self.write("agents1-1", variant("v", 0.8))
        self.write("agents3-1", variant("v", 0.8, accounted=False))
        code, out = self.compare()
        self.assertEqual(code, 1)
        self.assertIn("1 document pending", out)

    def test_a_run_without_summary_fails(self):
        self.write("agents1-1", variant("v", 0.8))
        (self.root / "agents3-1").mkdir()
        code, out = self.compare()
        self.assertEqual(code, 1)
        self.assertIn("agents3-1: no summary.json", out)

    def test_differing_wave_counts_are_listed(self):
        self.write("agents1-1", variant("v", 0.8, waves=1))
        self.write("agents3-1", variant("v", 0.8, waves=2))
        code, out = self.compare()
        self.assertEqual(code, 0)
        self.assertIn("recovered, 2 wave(s): agents3-1", out)

    def test_no_runs_is_an_error(self):
        code, _ = self.compare()
        self.assertEqual(code, 2)

    def test_permutation_p_of_separated_and_of_equal_groups(self):
        # Fully separated 3 + 3: only the observed split and its mirror are as extreme.
        self.assertAlmostEqual(agents_compare.permutation_p([1, 2, 3], [7, 8, 9]), 2 / 20)
        self.assertEqual(agents_compare.permutation_p([5, 5], [5, 5]), 1.0)


if __name__ == "__main__":
    unittest.main(verbosity=1)
