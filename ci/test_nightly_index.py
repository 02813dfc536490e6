#!/usr/bin/env python3
"""Tests of ci/nightly_index.py's time-to-proof table, on made-up nights
(standard library only): each night's sequential campaigns appear with their
wall time and runs against a fixed-size campaign's, and an unsettled one is
marked."""
import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nightly_index  # noqa: E402


def night(top, stamp, name, wall_s, used, fixed, settled):
    folder = top / stamp
    camp = folder / "campaigns" / name / "c1"
    camp.mkdir(parents=True)
    (folder / "runs.tsv").write_text("")
    (camp / "campaign.json").write_text(json.dumps({
        "plan": {"experiment": name, "quick": False},
        "sequential": {"settled": settled, "time_to_proof": {
            "wall_s": wall_s, "runs_used": used, "fixed_runs": fixed}},
    }))


class ProofTable(unittest.TestCase):
    def test_each_night_shows_time_runs_and_whether_it_settled(self):
        with tempfile.TemporaryDirectory() as d:
            top = Path(d)
            night(top, "20261206T000000Z", "retry-storm", 222.0, 15, 30, True)
            night(top, "20261207T000000Z", "retry-storm", 600.0, 60, 30, False)
            page, _, _ = nightly_index.render(top, nightly_index.collect(top))
            self.assertIn("Time to proof over the nights", page)
            self.assertIn("3.7 min, 15 runs (fixed: 30)", page)
            self.assertIn("10.0 min, 60 runs (fixed: 30)", page)
            self.assertIn("not settled", page)
            # Newest night first.
            self.assertLess(page.index("20261207T000000Z"), page.index("20261206T000000Z"))

    def test_no_sequential_campaign_no_table(self):
        with tempfile.TemporaryDirectory() as d:
            page, _, _ = nightly_index.render(Path(d), nightly_index.collect(Path(d)))
            self.assertNotIn("Time to proof", page)


if __name__ == "__main__":
    unittest.main()
