#!/usr/bin/env python3
"""Prints the reference values of crates/run-report/src/stats/tests.rs.

    pip install scipy numpy
    python3 ci/stats_reference.py > /tmp/reference.rs

The output is Rust: paste its constants over those in
crates/run-report/src/stats/tests.rs (the inputs below are copied there as
they are; change both together). Not run in CI: the values were computed
once, with the scipy and numpy versions the first line of the output names,
and the Rust tests compare against them at a relative tolerance of 1e-9.

Each value comes from the library a reader would check a campaign report
with, computed independently of the Rust code (which uses statrs):

- quartiles: numpy.percentile (its default "linear" method, Hyndman & Fan
  type 7) of the finite values;
- Clopper-Pearson: scipy.stats.beta.ppf (Boost's inverse incomplete beta);
  scipy.stats.binomtest(...).proportion_ci(method="exact") is printed beside
  it as a check only, as its root finder stops at an absolute 2e-12;
- Fisher: scipy.stats.fisher_exact(table).pvalue (two-sided);
- Mann-Whitney: scipy.stats.mannwhitneyu(x, y) with its defaults
  (two-sided, method="auto", continuity correction), on the samples without
  their NaNs (scipy would answer NaN); scipy answers NaN for an empty sample,
  where the Rust answers p = 1, so that case is printed as NaN for the record
  and checked by hand.
"""

import math
import sys
import warnings

import numpy as np
import scipy
from scipy import stats

# (name, values): NaN is written as None so the Rust side can copy the lists.
QUARTILE_SAMPLES = [
    ("ODD", [7.0, 1.0, 3.0, 5.0, 9.0]),
    ("EVEN", [4.0, 1.0, 3.0, 2.0]),
    ("NAN", [10.0, None, 2.0, 8.0, None, 4.0, 6.0, 1.5]),
    ("ONE", [42.0]),
    ("FIGURES", [189.0, 170.0, 201.0, 0.0, 150.0, 3.25, 17.0, 99.5, 64.0, 11.0]),
]

CLOPPER_PEARSON = [(0, 10), (10, 10), (3, 10), (1, 5), (50, 100), (1, 100), (99, 100), (7, 30)]
CONFIDENCES = [0.95, 0.99]

FISHER_TABLES = [
    [[0, 10], [10, 0]],
    [[3, 7], [6, 4]],
    [[1, 9], [0, 10]],
    [[0, 5], [0, 5]],
    [[0, 10], [3, 7]],
    [[3, 7], [7, 3]],
    [[8, 2], [1, 5]],
    [[2, 30], [15, 17]],
    [[0, 100], [100, 0]],
    [[100, 900], [150, 850]],
    [[1000, 1000], [1100, 900]],
]

# A 20-value sample without ties and one with many (documents given up per run).
X20 = [12.5, 3.1, 8.8, 15.2, 0.7, 9.9, 4.4, 18.1, 6.6, 11.3,
       2.2, 14.7, 7.5, 19.6, 5.8, 13.9, 1.4, 16.3, 10.1, 17.4]
Y20 = [21.0, 9.3, 25.6, 14.1, 30.2, 18.8, 22.7, 11.9, 27.4, 16.6,
       24.3, 19.5, 28.1, 13.2, 26.9, 20.4, 23.8, 15.7, 29.5, 17.9]
GIVEN_UP_A = [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1]
GIVEN_UP_B = [189, 170, 201, 0, 150, 189, 175, 160, 0, 201,
              188, 150, 170, 199, 210, 189, 166, 172, 0, 181]

MANN_WHITNEY = [
    # exact: no ties, at least one sample of 8 or fewer
    ("EXACT_DOC", [19, 22, 16, 29, 24], [20, 11, 17, 12]),
    ("EXACT_SEPARATED", [1, 2, 3], [4, 5, 6]),
    ("EXACT_HALF", [1, 4], [2, 3]),
    ("EXACT_ONE_EACH", [1], [2]),
    ("EXACT_3_8", [1.5, 2.1, 3.3], [4.0, 5.2, 6.1, 7.7, 0.2, 8.8, 9.9, 10.5]),
    ("EXACT_8_8", [0.5, 1.7, 2.9, 4.1, 5.3, 6.5, 7.7, 8.9],
     [1.1, 2.3, 3.5, 4.7, 5.9, 7.1, 8.3, 9.5]),
    ("EXACT_8_30", [31.5, 2.5, 40.5, 17.5, 8.5, 25.5, 36.5, 12.5], list(range(30))),
    # asymptotic: ties in a small sample
    ("TIES_SMALL", [0, 0, 0, 0, 0], [189, 170, 201, 0, 150]),
    ("TIES_SWAPPED", [189, 170, 201, 0, 150], [0, 0, 0, 0, 0]),
    # asymptotic: both samples above 8
    ("LARGE_NO_TIES", X20, Y20),
    ("LARGE_TIES", GIVEN_UP_A, GIVEN_UP_B),
    ("NINE_NINE", list(range(9)), [x + 4.5 for x in range(9)]),
    # degenerate
    ("ALL_EQUAL", [3, 3, 3], [3, 3]),
    ("ALL_EQUAL_LARGE", [7] * 12, [7] * 10),
    ("NAN_IGNORED", [1, None, 2, 5], [3, None, 4]),
    ("EMPTY_X", [], [1, 2, 3]),
]


def finite(values):
    return [v for v in values if v is not None and math.isfinite(v)]


def not_nan(values):
    return [float(v) for v in values if v is not None]


def rust(v):
    """A float as a Rust literal that reads back to the same double."""
    if isinstance(v, float) and math.isnan(v):
        return "f64::NAN"
    r = repr(float(v))
    return r if ("." in r or "e" in r or "inf" in r) else r + ".0"


def main():
    print(f"// scipy {scipy.__version__}, numpy {np.__version__}, "
          f"python {sys.version.split()[0]}")

    print("\n// numpy.percentile([25, 50, 75]) of the finite values: (q1, median, q3)")
    for name, values in QUARTILE_SAMPLES:
        q = np.percentile(finite(values), [25, 50, 75])
        print(f"const Q_{name}: [f64; 3] = [{', '.join(rust(v) for v in q)}];")

    print("\n// Clopper-Pearson (k, n, confidence, lo, hi): scipy.stats.beta.ppf")
    print("const CLOPPER_PEARSON: &[(u64, u64, f64, f64, f64)] = &[")
    worst = 0.0
    for conf in CONFIDENCES:
        a = 1 - conf
        for k, n in CLOPPER_PEARSON:
            lo = 0.0 if k == 0 else stats.beta.ppf(a / 2, k, n - k + 1)
            hi = 1.0 if k == n else stats.beta.ppf(1 - a / 2, k + 1, n - k)
            ci = stats.binomtest(k, n).proportion_ci(conf, method="exact")
            worst = max(worst, abs(ci.low - lo), abs(ci.high - hi))
            print(f"    ({k}, {n}, {rust(conf)}, {rust(lo)}, {rust(hi)}),")
    print("];")
    print(f"// binomtest's proportion_ci differs from these by at most {worst:.1e} (absolute)")

    print("\n// scipy.stats.fisher_exact(table).pvalue")
    print("const FISHER: &[([[u64; 2]; 2], f64)] = &[")
    for t in FISHER_TABLES:
        p = stats.fisher_exact(t).pvalue
        print(f"    ({t}, {rust(p)}),")
    print("];")

    print("\n// scipy.stats.mannwhitneyu(x, y) without the NaNs: (u, p, exact?)")
    for name, x, y in MANN_WHITNEY:
        xs, ys = not_nan(x), not_nan(y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = stats.mannwhitneyu(xs, ys)
        n1, n2 = len(xs), len(ys)
        ties = len(set(xs + ys)) < n1 + n2
        exact = not (n1 > 8 and n2 > 8) and not ties
        print(f"const MW_{name}: (f64, f64, bool) = "
              f"({rust(r.statistic)}, {rust(r.pvalue)}, {str(exact).lower()});")


if __name__ == "__main__":
    main()
