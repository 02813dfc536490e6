#!/usr/bin/env python3
"""Reference values for the harness's sequential tests (run-report's
stats/sprt.rs), written independently from the formulas with the standard
library only (no scipy needed):

* Wald's SPRT on a proportion, H0 p <= p0 against H1 p >= p1: each
  observation adds x*ln(p1/p0) + (1-x)*ln((1-p1)/(1-p0)); accept H1 at
  A = ln((1-beta)/alpha), H0 at B = ln(beta/(1-alpha)). Source: A. Wald,
  Sequential Analysis (1947), ch. 3 and 5 (eq. 3:5 for the boundaries);
  the same boundaries as fishtest's stats/sprt.py.
* Wald's paired comparison of two proportions (Sequential Analysis, ch. 6):
  only discordant pairs count; a pair with the event in the baseline only is
  a success of an SPRT with p0 = 1/2 and p1 = u1/(1+u1).

Each case's observations come from a fixed linear congruential generator,
so the table is the same on every machine. Writes the table as JSON:

    python3 ci/sprt_reference.py > crates/run-report/src/stats/sprt_reference.json
    python3 ci/sprt_reference.py --check   # the committed table is reproduced
"""

import json
import math
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "crates/run-report/src/stats/sprt_reference.json"


def lcg(seed):
    """Numerical Recipes' 32-bit LCG: uniform floats in [0, 1)."""
    state = seed & 0xFFFFFFFF
    while True:
        state = (1664525 * state + 1013904223) & 0xFFFFFFFF
        yield state / 2**32


def boundaries(alpha, beta):
    return math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))


def step_llr(p0, p1, success):
    if success:
        return math.log(p1 / p0)
    if p1 == 1.0:
        return -math.inf
    return math.log((1 - p1) / (1 - p0))


def run_sprt(p0, p1, alpha, beta, observations):
    """LLR after each observation until a boundary is crossed."""
    upper, lower = boundaries(alpha, beta)
    llr, llrs, decision = 0.0, [], "continue"
    for x in observations:
        llr += step_llr(p0, p1, x)
        llrs.append(llr)
        if llr >= upper:
            decision = "accept_h1"
            break
        if llr <= lower:
            decision = "accept_h0"
            break
    return llrs, decision


def proportion_cases():
    cases = []
    grid = [
        (0.5, 0.9, 0.05, 0.1, 0.9, 1),
        (0.5, 0.9, 0.05, 0.1, 0.5, 2),
        (0.7, 0.9, 0.05, 0.1, 0.8, 3),
        (0.8, 1.0, 0.05, 0.1, 1.0, 4),
        (0.8, 1.0, 0.05, 0.1, 0.7, 5),
        (0.1, 0.3, 0.01, 0.01, 0.2, 6),
        (0.4, 0.6, 0.2, 0.2, 0.6, 7),
        (0.05, 0.25, 0.05, 0.05, 0.05, 8),
    ]
    for p0, p1, alpha, beta, truth, seed in grid:
        u = lcg(seed)
        obs = [next(u) < truth for _ in range(200)]
        llrs, decision = run_sprt(p0, p1, alpha, beta, obs)
        upper, lower = boundaries(alpha, beta)
        cases.append({
            "p0": p0, "p1": p1, "alpha": alpha, "beta": beta,
            "observations": [int(x) for x in obs[:len(llrs)]],
            "llrs": [x if math.isfinite(x) else "-inf" for x in llrs],
            "upper": upper, "lower": lower, "decision": decision,
        })
    return cases


def paired_cases():
    cases = []
    grid = [
        # u1, alpha, beta, P(event | baseline), P(event | candidate), seed
        (9.0, 0.05, 0.1, 0.95, 0.05, 11),
        (9.0, 0.05, 0.1, 0.5, 0.5, 12),
        (4.0, 0.05, 0.05, 0.7, 0.3, 13),
        (19.0, 0.01, 0.1, 1.0, 0.0, 14),
    ]
    for u1, alpha, beta, pb, pc, seed in grid:
        u = lcg(seed)
        pairs = [(next(u) < pb, next(u) < pc) for _ in range(300)]
        q1 = u1 / (1 + u1)
        upper, lower = boundaries(alpha, beta)
        llr, llrs, decision, used = 0.0, [], "continue", 0
        for b, c in pairs:
            used += 1
            if b != c:
                llr += step_llr(0.5, q1, b)
            llrs.append(llr)
            if llr >= upper:
                decision = "accept_h1"
                break
            if llr <= lower:
                decision = "accept_h0"
                break
        cases.append({
            "u1": u1, "alpha": alpha, "beta": beta,
            "pairs": [[int(b), int(c)] for b, c in pairs[:used]],
            "llrs": llrs, "upper": upper, "lower": lower, "decision": decision,
        })
    return cases


def table():
    return {
        "source": "ci/sprt_reference.py: Wald, Sequential Analysis (1947), from the formulas",
        "proportion": proportion_cases(),
        "paired": paired_cases(),
    }


def main():
    text = json.dumps(table(), indent=1) + "\n"
    if sys.argv[1:] == ["--check"]:
        if FIXTURE.read_text() != text:
            sys.exit(f"{FIXTURE} differs from what ci/sprt_reference.py computes; regenerate it")
        print(f"{FIXTURE.name}: reproduced")
        return
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
