//! The statistics against reference values computed independently with
//! scipy 1.17.1 and numpy 2.4.6 by `ci/stats_reference.py` (its output is
//! pasted below; the inputs are copied from it, so change both together).
//!
//! Every value is compared at a relative tolerance of 1e-9: far below what
//! a report prints, and far above the rounding of either side (the largest
//! difference measured was 1e-10, statrs's erfc in the Mann–Whitney
//! normal approximation).

use super::*;

const TOLERANCE: f64 = 1e-9;

fn assert_close(actual: f64, expected: f64, what: &str) {
    let error = if expected == 0.0 {
        actual.abs()
    } else {
        ((actual - expected) / expected).abs()
    };
    assert!(
        error <= TOLERANCE,
        "{what}: {actual:e}, expected {expected:e} (relative error {error:.1e})"
    );
}

// ---- quartiles: numpy.percentile([25, 50, 75]) of the finite values ----

const NAN: f64 = f64::NAN;
const S_ODD: &[f64] = &[7.0, 1.0, 3.0, 5.0, 9.0];
const S_EVEN: &[f64] = &[4.0, 1.0, 3.0, 2.0];
const S_NAN: &[f64] = &[10.0, NAN, 2.0, 8.0, NAN, 4.0, 6.0, 1.5];
const S_ONE: &[f64] = &[42.0];
const S_FIGURES: &[f64] = &[
    189.0, 170.0, 201.0, 0.0, 150.0, 3.25, 17.0, 99.5, 64.0, 11.0,
];

const Q_ODD: [f64; 3] = [3.0, 5.0, 7.0];
const Q_EVEN: [f64; 3] = [1.75, 2.5, 3.25];
const Q_NAN: [f64; 3] = [2.5, 5.0, 7.5];
const Q_ONE: [f64; 3] = [42.0, 42.0, 42.0];
const Q_FIGURES: [f64; 3] = [12.5, 81.75, 165.0];

#[test]
fn quartiles_match_numpy_percentile() {
    let cases = [
        ("odd", S_ODD, Q_ODD, 5, 1.0, 9.0),
        ("even", S_EVEN, Q_EVEN, 4, 1.0, 4.0),
        ("nan", S_NAN, Q_NAN, 6, 1.5, 10.0),
        ("one", S_ONE, Q_ONE, 1, 42.0, 42.0),
        ("figures", S_FIGURES, Q_FIGURES, 10, 0.0, 201.0),
    ];
    for (name, values, [q1, median, q3], n, min, max) in cases {
        let s = Spread::of(values).unwrap();
        assert_eq!((s.n, s.min, s.max), (n, min, max), "{name}");
        assert_close(s.q1, q1, name);
        assert_close(s.median, median, name);
        assert_close(s.q3, q3, name);
    }
}

#[test]
fn spread_leaves_out_what_is_not_finite() {
    assert_eq!(Spread::of(&[]), None);
    assert_eq!(Spread::of(&[NAN, NAN]), None);
    let with_infinities = [f64::NEG_INFINITY, 4.0, 1.0, 3.0, f64::INFINITY, 2.0];
    assert_eq!(Spread::of(&with_infinities), Spread::of(S_EVEN));
}

#[test]
fn spread_serializes_as_a_flat_object() {
    let json = serde_json::to_value(Spread::of(S_EVEN).unwrap()).unwrap();
    let expected = serde_json::json!({
        "n": 4, "min": 1.0, "q1": 1.75, "median": 2.5, "q3": 3.25, "max": 4.0
    });
    assert_eq!(json, expected);
}

// ---- Clopper-Pearson: scipy.stats.beta.ppf ----

/// (k, n, confidence, lo, hi)
const CLOPPER_PEARSON: &[(u64, u64, f64, f64, f64)] = &[
    (0, 10, 0.95, 0.0, 0.3084971078187607),
    (10, 10, 0.95, 0.6915028921812392, 1.0),
    (3, 10, 0.95, 0.0667395111777345, 0.6524528500599973),
    (1, 5, 0.95, 0.005050763379468061, 0.7164179361180895),
    (50, 100, 0.95, 0.398321129503301, 0.601678870496699),
    (1, 100, 0.95, 0.00025314603297742086, 0.054459385392080645),
    (99, 100, 0.95, 0.9455406146079194, 0.9997468539670226),
    (7, 30, 0.95, 0.09933786495801977, 0.4228365229782195),
    (0, 10, 0.99, 0.0, 0.4112959813475253),
    (10, 10, 0.99, 0.5887040186524747, 1.0),
    (3, 10, 0.99, 0.03700722109623209, 0.7351139852871307),
    (1, 5, 0.99, 0.0010020060210801215, 0.8149027278782698),
    (50, 100, 0.99, 0.3688614373589241, 0.6311385626410759),
    (1, 100, 0.99, 5.012416197765646e-05, 0.0719576824016363),
    (99, 100, 0.99, 0.9280423175983636, 0.9999498758380223),
    (7, 30, 0.99, 0.0729228590840526, 0.47987505192641317),
];

#[test]
fn clopper_pearson_matches_scipy() {
    for &(k, n, confidence, lo, hi) in CLOPPER_PEARSON {
        let what = format!("{k}/{n} at {confidence}");
        let interval = clopper_pearson(k, n, confidence);
        assert_close(interval.lo, lo, &what);
        assert_close(interval.hi, hi, &what);
    }
}

#[test]
fn clopper_pearson_ends_are_exact_at_none_and_all() {
    assert_eq!(clopper_pearson(0, 10, 0.95).lo, 0.0);
    assert_eq!(clopper_pearson(10, 10, 0.95).hi, 1.0);
    let nothing_known = Interval { lo: 0.0, hi: 1.0 };
    assert_eq!(clopper_pearson(0, 0, 0.95), nothing_known);
}

#[test]
#[should_panic(expected = "11 successes in 10 runs")]
fn clopper_pearson_refuses_more_successes_than_runs() {
    clopper_pearson(11, 10, 0.95);
}

#[test]
fn share_displays_whole_percent() {
    assert_eq!(Share::new(0, 10).to_string(), "0/10 [0–31 %]");
    assert_eq!(Share::new(10, 10).to_string(), "10/10 [69–100 %]");
    assert_eq!(Share::new(3, 10).to_string(), "3/10 [7–65 %]");
    assert_eq!(Share::new(0, 0).to_string(), "0/0 [0–100 %]");
}

// ---- Fisher: scipy.stats.fisher_exact(table).pvalue ----

const FISHER: &[([[u64; 2]; 2], f64)] = &[
    ([[0, 10], [10, 0]], 1.082508822446903e-05),
    ([[3, 7], [6, 4]], 0.3698499642772088),
    ([[1, 9], [0, 10]], 1.0),
    ([[0, 5], [0, 5]], 1.0),
    ([[0, 10], [3, 7]], 0.21052631578947367),
    ([[3, 7], [7, 3]], 0.1788954079975752),
    ([[8, 2], [1, 5]], 0.034965034965034975),
    ([[2, 30], [15, 17]], 0.00043555931497250914),
    ([[0, 100], [100, 0]], 2.208760693199503e-59),
    ([[100, 900], [150, 850]], 0.0008950875386906894),
    ([[1000, 1000], [1100, 900]], 0.0017176151783842473),
];

#[test]
fn fisher_matches_scipy() {
    for &(table, p) in FISHER {
        assert_close(fisher_exact(table), p, &format!("{table:?}"));
    }
}

#[test]
fn fisher_does_not_depend_on_how_the_table_is_laid_out() {
    for &(t, _) in FISHER {
        let p = fisher_exact(t);
        let rows_swapped = [t[1], t[0]];
        let transposed = [[t[0][0], t[1][0]], [t[0][1], t[1][1]]];
        assert_close(
            fisher_exact(rows_swapped),
            p,
            &format!("{t:?} rows swapped"),
        );
        assert_close(fisher_exact(transposed), p, &format!("{t:?} transposed"));
    }
}

// ---- Mann-Whitney: scipy.stats.mannwhitneyu(x, y) without the NaNs ----

/// (u, p, exact?)
type Reference = (f64, f64, bool);

const X20: &[f64] = &[
    12.5, 3.1, 8.8, 15.2, 0.7, 9.9, 4.4, 18.1, 6.6, 11.3, 2.2, 14.7, 7.5, 19.6, 5.8, 13.9, 1.4,
    16.3, 10.1, 17.4,
];
const Y20: &[f64] = &[
    21.0, 9.3, 25.6, 14.1, 30.2, 18.8, 22.7, 11.9, 27.4, 16.6, 24.3, 19.5, 28.1, 13.2, 26.9, 20.4,
    23.8, 15.7, 29.5, 17.9,
];
const GIVEN_UP_A: &[f64] = &[
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    1.0,
];
const GIVEN_UP_B: &[f64] = &[
    189.0, 170.0, 201.0, 0.0, 150.0, 189.0, 175.0, 160.0, 0.0, 201.0, 188.0, 150.0, 170.0, 199.0,
    210.0, 189.0, 166.0, 172.0, 0.0, 181.0,
];

const MW_EXACT_DOC: Reference = (17.0, 0.1111111111111111, true);
const MW_EXACT_SEPARATED: Reference = (0.0, 0.1, true);
const MW_EXACT_HALF: Reference = (2.0, 1.0, true);
const MW_EXACT_ONE_EACH: Reference = (0.0, 1.0, true);
const MW_EXACT_3_8: Reference = (3.0, 0.08484848484848484, true);
const MW_EXACT_8_8: Reference = (28.0, 0.7209013209013208, true);
const MW_EXACT_8_30: Reference = (159.0, 0.17135680208685303, true);
const MW_TIES_SMALL: Reference = (2.5, 0.025369859822053694, false);
const MW_TIES_SWAPPED: Reference = (22.5, 0.025369859822053694, false);
const MW_LARGE_NO_TIES: Reference = (43.0, 2.3024709881112628e-05, false);
const MW_LARGE_TIES: Reference = (34.5, 1.8164787524623522e-06, false);
const MW_NINE_NINE: Reference = (10.0, 0.008071487425268009, false);
const MW_ALL_EQUAL: Reference = (3.0, 1.0, false);
const MW_ALL_EQUAL_LARGE: Reference = (60.0, 1.0, false);
const MW_NAN_IGNORED: Reference = (2.0, 0.8, true);

fn check(name: &str, x: &[f64], y: &[f64], (u, p, exact): Reference) {
    let result = mann_whitney_u(x, y);
    assert_close(result.u, u, &format!("{name}: u"));
    assert_close(result.p_value, p, &format!("{name}: p"));
    let method = if exact {
        Method::Exact
    } else {
        Method::Asymptotic
    };
    assert_eq!(result.method, method, "{name}");
}

#[test]
fn mann_whitney_exact_matches_scipy() {
    check(
        "doc",
        &[19., 22., 16., 29., 24.],
        &[20., 11., 17., 12.],
        MW_EXACT_DOC,
    );
    check(
        "separated",
        &[1., 2., 3.],
        &[4., 5., 6.],
        MW_EXACT_SEPARATED,
    );
    check("half", &[1., 4.], &[2., 3.], MW_EXACT_HALF);
    check("one each", &[1.], &[2.], MW_EXACT_ONE_EACH);
    let y8 = [4.0, 5.2, 6.1, 7.7, 0.2, 8.8, 9.9, 10.5];
    check("3 and 8", &[1.5, 2.1, 3.3], &y8, MW_EXACT_3_8);
    let x8 = [0.5, 1.7, 2.9, 4.1, 5.3, 6.5, 7.7, 8.9];
    let y8 = [1.1, 2.3, 3.5, 4.7, 5.9, 7.1, 8.3, 9.5];
    check("8 and 8", &x8, &y8, MW_EXACT_8_8);
    // One sample of 8 is enough for scipy's "auto" to count exactly.
    let x8 = [31.5, 2.5, 40.5, 17.5, 8.5, 25.5, 36.5, 12.5];
    let y30: Vec<f64> = (0..30).map(f64::from).collect();
    check("8 and 30", &x8, &y30, MW_EXACT_8_30);
}

#[test]
fn mann_whitney_asymptotic_matches_scipy() {
    let zeros = [0.0; 5];
    let given_up = [189.0, 170.0, 201.0, 0.0, 150.0];
    check("ties, small", &zeros, &given_up, MW_TIES_SMALL);
    check("ties, swapped", &given_up, &zeros, MW_TIES_SWAPPED);
    check("20 each, no ties", X20, Y20, MW_LARGE_NO_TIES);
    check("20 each, ties", GIVEN_UP_A, GIVEN_UP_B, MW_LARGE_TIES);
    // Both samples above 8: normal approximation even without ties.
    let x9: Vec<f64> = (0..9).map(f64::from).collect();
    let y9: Vec<f64> = x9.iter().map(|v| v + 4.5).collect();
    check("9 and 9", &x9, &y9, MW_NINE_NINE);
}

#[test]
fn mann_whitney_degenerate_inputs() {
    check("all equal", &[3.0; 3], &[3.0; 2], MW_ALL_EQUAL);
    check(
        "all equal, large",
        &[7.0; 12],
        &[7.0; 10],
        MW_ALL_EQUAL_LARGE,
    );
    check(
        "NaN left out",
        &[1., NAN, 2., 5.],
        &[3., NAN, 4.],
        MW_NAN_IGNORED,
    );
    // scipy: NaN. Here: one possible ordering, so p = 1 exactly.
    let nothing_to_compare = MannWhitney {
        u: 0.0,
        p_value: 1.0,
        method: Method::Exact,
    };
    assert_eq!(mann_whitney_u(&[], &[1., 2., 3.]), nothing_to_compare);
    assert_eq!(mann_whitney_u(&[1., 2., 3.], &[NAN]), nothing_to_compare);
    assert_eq!(mann_whitney_u(&[], &[]), nothing_to_compare);
    // Ties in the only sample: scipy's rule picks the normal approximation,
    // whose variance is 0.
    assert_eq!(mann_whitney_u(&[], &[2., 2.]).p_value, 1.0);
}

#[test]
fn mann_whitney_swapping_the_samples_mirrors_u() {
    for (x, y) in [(X20, Y20), (GIVEN_UP_A, GIVEN_UP_B), (&X20[..5], &Y20[..7])] {
        let (xy, yx) = (mann_whitney_u(x, y), mann_whitney_u(y, x));
        assert_eq!(xy.u + yx.u, (x.len() * y.len()) as f64);
        assert_eq!((xy.p_value, xy.method), (yx.p_value, yx.method));
    }
}

#[test]
fn format_p_stops_at_a_thousandth() {
    assert_eq!(format_p(2.2e-59), "p < 0.001");
    assert_eq!(format_p(0.000_999), "p < 0.001");
    assert_eq!(format_p(0.001), "p = 0.001");
    assert_eq!(format_p(0.034_965), "p = 0.035");
    assert_eq!(format_p(1.0), "p = 1.000");
}
