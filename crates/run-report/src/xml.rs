//! Escaping for XML and HTML text and attributes. Characters XML 1.0 forbids
//! (control characters other than tab, newline and carriage return) are
//! replaced by U+FFFD so that junit.xml always parses, whatever a variant name
//! or an error message contains.

/// Escape `&`, `<`, `>`, `"` and `'`, and replace forbidden control characters.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Like [`escape`], for attribute values: newlines and tabs become character
/// references so they survive attribute-value normalisation.
pub fn escape_attr(text: &str) -> String {
    escape(text)
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
        .replace('\t', "&#9;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            escape(r#"<a href="x">&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("a\u{1}b\nc"), "a\u{FFFD}b\nc");
        assert_eq!(escape_attr("a\nb"), "a&#10;b");
    }
}
