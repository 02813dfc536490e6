//! An error printed with its causes, `outer: inner: ...`, as `anyhow`'s
//! `{:#}` printed it: the harness's error types hold a foreign error (I/O,
//! HTTP, containers) as a plain field, not a `source`, and print it this way,
//! so their own text is the whole story.

use std::error::Error;
use std::fmt;

/// Displays `0` and then each of its causes, each after `": "`.
pub(crate) struct Causes<'a>(pub(crate) &'a (dyn Error + 'static));

impl fmt::Display for Causes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn prints_the_chain() {
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(Causes(&e).to_string(), "outer: inner");
    }
}
