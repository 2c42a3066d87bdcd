//! JUnit XML: one test case per budget, so a CI system lists each gate by name. Written
//! by hand (a dozen elements do not need an XML crate); every text goes through
//! [`escape`], which a test checks against a real XML parser in the e2e suite.

use std::fmt::Write as _;

use super::budget::Verdict;

/// One suite per target that budgets were judged on.
pub struct Suite<'a> {
    pub name: &'a str,
    pub verdicts: &'a [Verdict],
    /// Wall-clock seconds the runs took.
    pub seconds: f64,
}

pub fn render(suites: &[Suite<'_>]) -> String {
    let tests: usize = suites.iter().map(|s| s.verdicts.len()).sum();
    let failures: usize = suites
        .iter()
        .map(|s| s.verdicts.iter().filter(|v| !v.passed).count())
        .sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    // Writing to a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(
        out,
        "<testsuites name=\"ttfx run\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">"
    );
    for suite in suites {
        let failed = suite.verdicts.iter().filter(|v| !v.passed).count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" time=\"{:.3}\">",
            escape(&format!("ttfx run: {}", suite.name)),
            suite.verdicts.len(),
            suite.seconds
        );
        for v in suite.verdicts {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">",
                escape(&format!("ttfx.budget.{}", suite.name)),
                escape(&v.budget.text)
            );
            if v.passed {
                let _ = writeln!(
                    out,
                    "<system-out>{}</system-out></testcase>",
                    escape(&v.describe())
                );
            } else {
                let _ = writeln!(
                    out,
                    "\n      <failure type=\"budget\" message=\"{}\">{}</failure>\n    </testcase>",
                    escape(&v.describe()),
                    escape(&v.describe())
                );
            }
        }
        let _ = writeln!(out, "  </testsuite>");
    }
    out.push_str("</testsuites>\n");
    out
}

/// Text safe inside an attribute or element: the five XML escapes, and characters XML 1.0
/// cannot hold at all (most C0 controls) dropped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::RunBudget;

    #[test]
    fn escape_covers_markup_and_drops_what_xml_cannot_hold() {
        assert_eq!(
            escape("a<=b & \"c\" 'd' >"),
            "a&lt;=b &amp; &quot;c&quot; &apos;d&apos; &gt;"
        );
        assert_eq!(escape("x\u{1}y\u{FFFF}z\n"), "xyz\n");
    }

    #[test]
    fn one_testcase_per_budget_and_failures_counted() {
        let stats = std::collections::BTreeMap::new();
        let verdicts = vec![RunBudget::parse("ttft.p90<=1ms").unwrap().judge(&stats)];
        let xml = render(&[Suite {
            name: "sim/default",
            verdicts: &verdicts,
            seconds: 1.5,
        }]);
        assert!(xml.contains("tests=\"1\" failures=\"1\""), "{xml}");
        assert!(xml.contains("name=\"ttft.p90&lt;=1ms\""), "{xml}");
        assert!(xml.contains("<failure type=\"budget\""), "{xml}");
    }
}
