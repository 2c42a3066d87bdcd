//! Another crate's error said whole, on one line: for a variant that holds it and
//! carries it in its own text instead of a `source` chain.

use std::fmt;

/// An error and its sources, joined with ": " as a `{:#}` print of anyhow joins them: a
/// variant that holds another crate's error says it whole in its own text.
pub(crate) struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
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
    fn an_error_is_said_with_its_sources_as_anyhow_joins_them() {
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(Chain(&e).to_string(), "outer: inner");
        assert_eq!(
            Chain(&e).to_string(),
            format!(
                "{:#}",
                anyhow::Error::from(Outer(std::io::Error::other("inner")))
            )
        );
    }
}
