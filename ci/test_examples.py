#!/usr/bin/env python3
"""ci/examples.py on pages broken on purpose: a copy of the README with its
quickstart's option misspelt, or its shown output changed, fails (exit 1);
so do an example whose expectation fails, a command that is not the
harness's, a template, and a skip without its reason; the same pages unbroken pass. Needs target/debug/harness
(cargo build -p harness; $CARGO_TARGET_DIR/debug/harness when that is
set). Standard library only (unittest)."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import examples  # noqa: E402

HARNESS = examples.default_harness()


def check(text):
    """(exit code, output) of ci/examples.py on one page holding `text`."""
    d = tempfile.mkdtemp(prefix="test-examples-")
    page = os.path.join(d, "page.md")
    with open(page, "w", encoding="utf-8") as f:
        f.write(text)
    p = subprocess.run([sys.executable, os.path.join(HERE, "examples.py"), "--timeout", "120", page],
                       capture_output=True, text=True, cwd=ROOT)
    return p.returncode, p.stdout + p.stderr


def readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read()


QUICKSTART = "cargo run -p harness -- docs/tutorial/my-incident.yaml --quick --clock virtual"


class Examples(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(HARNESS, os.X_OK):
            raise RuntimeError(f"no {HARNESS}: build it first (cargo build -p harness)")

    def test_the_readme_as_it_is_passes(self):
        code, out = check(readme())
        self.assertEqual(code, 0, out)
        self.assertIn("0 failed", out)
        self.assertIn("skip ", out)  # the set-up commands, with their reasons

    def test_a_misspelt_option_in_the_quickstart_fails(self):
        text = readme()
        self.assertIn(QUICKSTART, text)
        code, out = check(text.replace(QUICKSTART, QUICKSTART.replace("--clock virtual", "--clock virtul")))
        self.assertEqual(code, 1, out)
        self.assertIn("FAIL", out)
        self.assertIn("exit 2", out)

    def test_output_that_differs_from_what_is_printed_fails(self):
        text = readme()
        shown = "lost documents 316"
        self.assertIn(shown, text)
        code, out = check(text.replace(shown, "lost documents 317", 1))
        self.assertEqual(code, 1, out)
        self.assertIn("differs from what the command prints", out)

    def test_a_refused_real_time_command_is_validated_not_failed(self):
        page = "```sh\nharness experiments/gunicorn-retry.yaml --quick\n```\n"
        code, out = check(page)
        self.assertEqual(code, 0, out)
        self.assertIn("1 validated", out)
        code, out = check(page.replace("gunicorn-retry", "no-such-file"))
        self.assertEqual(code, 1, out)

    def test_an_expectation_that_fails_fails_the_example(self):
        d = tempfile.mkdtemp(prefix="test-examples-")
        with open(os.path.join(ROOT, "docs", "tutorial", "my-incident.yaml"), encoding="utf-8") as f:
            text = f.read()
        bad = os.path.join(d, "my-incident.yaml")
        with open(bad, "w", encoding="utf-8") as f:
            f.write(text.replace('duplicate_compute_share: ">= 0.3"', 'duplicate_compute_share: ">= 0.99"'))
        code, out = check(f"```sh\nharness {bad} --quick\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("exit 1", out)

    def test_a_command_that_is_not_the_harness_needs_a_mark(self):
        code, out = check("```sh\nrm -rf /tmp/nothing-here\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("not a harness command", out)
        code, out = check("<!-- example: skip (removes a folder) -->\n```sh\nrm -rf /tmp/nothing-here\n```\n")
        self.assertEqual(code, 0, out)
        self.assertIn("removes a folder", out)

    def test_a_skip_needs_its_reason_and_a_template_is_not_an_example(self):
        code, out = check("<!-- example: skip -->\n```sh\nharness schema\n```\n")
        self.assertEqual(code, 1, out)
        code, out = check("```sh\nharness report DIR --with FILE\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("template", out)

    def test_a_shell_block_runs_and_its_failure_counts(self):
        code, out = check("<!-- example: shell -->\n```sh\nharness schema > /dev/null\n```\n")
        self.assertEqual(code, 0, out)
        code, out = check("<!-- example: shell -->\n```sh\nharness schema --no-such-option\n```\n")
        self.assertEqual(code, 1, out)


if __name__ == "__main__":
    unittest.main()
