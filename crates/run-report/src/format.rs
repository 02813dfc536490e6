//! Number formatting shared by the HTML, JUnit and messages, so a value reads
//! the same everywhere ("0.78", "12", "78.0 %", "—" when undefined).

/// A verdict class in words, as every page and terminal line writes it:
/// `never_healthy` (the name an expectation or a JSON key writes) is
/// "never healthy", `no_trigger` "no trigger"; the others are one word.
pub fn class_words(class: &str) -> String {
    class.replace('_', " ")
}

/// A number without noise: integers as integers, otherwise up to 4 significant
/// decimals, trailing zeros trimmed. Non-finite values as `NaN`, `inf`, `-inf`.
pub fn num(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let decimals = if x.abs() >= 100.0 {
        1
    } else if x.abs() >= 1.0 {
        3
    } else {
        4
    };
    let s = format!("{x:.decimals$}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// `Some(x)` as [`num`], `None` as an em dash.
pub fn opt_num(x: Option<f64>) -> String {
    x.map_or_else(|| "—".to_string(), num)
}

/// A ratio as a percentage with one decimal, e.g. `78.0 %`.
pub fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1} %", x * 100.0)
    } else {
        num(x)
    }
}

/// `Some(ratio)` as [`pct`], `None` as an em dash.
pub fn opt_pct(x: Option<f64>) -> String {
    x.map_or_else(|| "—".to_string(), pct)
}

/// Milliseconds with precision that matters: `2400 ms`, `47.2 ms`, `3.25 ms`.
pub fn ms(x: f64) -> String {
    if !x.is_finite() {
        return format!("{} ms", num(x));
    }
    let decimals = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else {
        2
    };
    let s = format!("{x:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    format!("{s} ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(num(3.0), "3");
        assert_eq!(num(0.78), "0.78");
        assert_eq!(num(1234.56), "1234.6");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(-0.00001), "0");
        assert_eq!(num(f64::NAN), "NaN");
        assert_eq!(opt_num(None), "—");
        assert_eq!(pct(0.781), "78.1 %");
        assert_eq!(ms(47.176), "47.2 ms");
        assert_eq!(ms(2400.4), "2400 ms");
        assert_eq!(ms(3.0), "3 ms");
    }
}
