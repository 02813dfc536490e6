//! Templates of a request's path, headers, body and result check:
//! literal text with `{var}` placeholders (`{{` and `}}` are braces).
//!
//! Parsed once when the file is validated, so an unknown variable is a
//! located error before anything runs, and rendering an attempt is a walk
//! over the parts with no parsing.

use std::fmt::Write;

/// The variables a template may name: what is known of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    /// The drawn member of `keys` (or the request's id without keys).
    Key,
    /// `t1` to `tN`.
    Tenant,
    /// The request's id: unique in the run, the same for its retries.
    Id,
    /// Its class's name.
    Class,
    /// 1 for the first attempt, 2 for the first retry, ...
    Attempt,
    /// The wall clock at the attempt's send, in microseconds since the Unix
    /// epoch (`X-Request-Start: t={sent_unix_us}`, as proxies write it).
    SentUnixUs,
}

impl Var {
    /// Every variable, as templates name them.
    pub const ALL: [(&'static str, Var); 6] = [
        ("key", Var::Key),
        ("tenant", Var::Tenant),
        ("id", Var::Id),
        ("class", Var::Class),
        ("attempt", Var::Attempt),
        ("sent_unix_us", Var::SentUnixUs),
    ];

    fn named(name: &str) -> Option<Var> {
        Var::ALL.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// Whether its value changes from one attempt of a request to the next.
    pub fn per_attempt(self) -> bool {
        matches!(self, Var::Attempt | Var::SentUnixUs)
    }

    /// The names, for an error message.
    pub fn names() -> String {
        let names: Vec<String> = Var::ALL.iter().map(|(n, _)| format!("{{{n}}}")).collect();
        names.join(", ")
    }
}

/// One part of a template.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Var(Var),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Template {
    pub parts: Vec<Part>,
}

/// Why a template does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TemplateError {
    #[error("{{{0}}} is not a variable; the variables are {names}", names = Var::names())]
    Unknown(String),
    #[error("an unclosed `{{` (write `{{{{` for a brace)")]
    Unclosed,
    #[error("a lone `}}` (write `}}}}` for a brace)")]
    LoneClose,
}

/// The values of one attempt's variables.
pub trait Values {
    fn write(&self, var: Var, out: &mut String);
}

impl Template {
    /// Parses `text`: every `{name}` must name a [`Var`].
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        Self::parse_with(text, false)
    }

    /// Parses a regular expression's template: `{name}` is a variable
    /// when `name` is a variable's name, and any other brace is the
    /// expression's own (`\d{3}`); a `{word}` that is not a variable is
    /// an error, since a misspelt variable would silently match literally.
    pub fn parse_regex(text: &str) -> Result<Template, TemplateError> {
        Self::parse_with(text, true)
    }

    fn parse_with(text: &str, regex: bool) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(i) = rest.find(['{', '}']) {
            lit.push_str(&rest[..i]);
            let tail = &rest[i..];
            if let Some(after) = tail.strip_prefix("{{").or(tail.strip_prefix("}}")) {
                lit.push_str(&tail[..1]);
                rest = after;
                continue;
            }
            if let Some(after) = tail.strip_prefix('}') {
                if regex {
                    lit.push('}');
                    rest = after;
                    continue;
                }
                return Err(TemplateError::LoneClose);
            }
            let Some(end) = tail.find('}') else {
                if regex {
                    lit.push_str(tail);
                    rest = "";
                    break;
                }
                return Err(TemplateError::Unclosed);
            };
            let name = &tail[1..end];
            let word = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.chars().all(|c| c.is_ascii_digit());
            match Var::named(name) {
                Some(v) => {
                    if !lit.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut lit)));
                    }
                    parts.push(Part::Var(v));
                }
                // A quantifier (`{3}`, `{2,5}`) in a regular expression.
                None if regex && !word => lit.push_str(&tail[..=end]),
                None => return Err(TemplateError::Unknown(name.to_string())),
            }
            rest = &tail[end + 1..];
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            parts.push(Part::Text(lit));
        }
        Ok(Template { parts })
    }

    /// The variables it names.
    pub fn vars(&self) -> impl Iterator<Item = Var> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(*v),
            Part::Text(_) => None,
        })
    }

    /// Renders it, each variable's value passed through `escape`.
    pub fn render_escaped(&self, values: &dyn Values, escape: &dyn Fn(&str) -> String) -> String {
        let mut out = String::new();
        let mut value = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Var(v) => {
                    value.clear();
                    values.write(*v, &mut value);
                    out.push_str(&escape(&value));
                }
            }
        }
        out
    }

    /// Renders it.
    pub fn render(&self, values: &dyn Values) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Var(v) => values.write(*v, &mut out),
            }
        }
        out
    }
}

/// Fixed values (a variable not listed renders empty): for checking a
/// template when the file is validated, and for tests.
pub struct Fixed<'a>(pub &'a [(Var, &'a str)]);

impl Values for Fixed<'_> {
    fn write(&self, var: Var, out: &mut String) {
        if let Some((_, v)) = self.0.iter().find(|(k, _)| *k == var) {
            let _ = write!(out, "{v}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_and_escaped_braces() {
        let t = Template::parse("/items/{key}?t={tenant}&x={{y}}").unwrap();
        let v = &Fixed(&[(Var::Key, "42"), (Var::Tenant, "t3")]);
        assert_eq!(t.render(v), "/items/42?t=t3&x={y}");
        assert_eq!(t.vars().collect::<Vec<_>>(), vec![Var::Key, Var::Tenant]);
    }

    #[test]
    fn an_unknown_variable_is_named() {
        let e = Template::parse("/items/{kee}").unwrap_err();
        assert_eq!(e, TemplateError::Unknown("kee".into()));
        assert!(e.to_string().contains("{key}"), "{e}");
        assert_eq!(
            Template::parse("/a/{key").unwrap_err(),
            TemplateError::Unclosed
        );
        assert_eq!(
            Template::parse("/a}").unwrap_err(),
            TemplateError::LoneClose
        );
    }

    #[test]
    fn a_regex_keeps_its_quantifiers_but_not_a_misspelt_variable() {
        let t = Template::parse_regex(r#""id":\d{1,3},"key":"{key}""#).unwrap();
        let v = &Fixed(&[(Var::Key, "a.b")]);
        assert_eq!(
            t.render_escaped(v, &|s| s.replace('.', "\\.")),
            r#""id":\d{1,3},"key":"a\.b""#
        );
        assert_eq!(
            Template::parse_regex(r#""key":"{ky}""#).unwrap_err(),
            TemplateError::Unknown("ky".into())
        );
    }
}
