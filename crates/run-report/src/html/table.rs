//! Table helpers shared by the report's sections: cells are pre-escaped
//! HTML, numbers right-aligned.

use std::fmt::Write;

pub fn row(h: &mut String, class: &str, cells: &[String]) {
    let _ = write!(
        h,
        "<tr{}>",
        if class.is_empty() {
            String::new()
        } else {
            format!(" class=\"{class}\"")
        }
    );
    for c in cells {
        // Cells are pre-escaped HTML; numbers are right-aligned.
        let numeric = c
            .chars()
            .next()
            .is_some_and(|ch| ch.is_ascii_digit() || ch == '-' || ch == '—');
        let _ = write!(
            h,
            "<td{}>{c}</td>",
            if numeric { " class=\"num\"" } else { "" }
        );
    }
    h.push_str("</tr>\n");
}

pub fn head(h: &mut String, cols: &[&str]) {
    h.push_str("<table>\n<tr>");
    for c in cols {
        let _ = write!(h, "<th>{c}</th>");
    }
    h.push_str("</tr>\n");
}
