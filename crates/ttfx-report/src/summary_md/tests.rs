// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::test_fixture;

fn summary(heading: &str, batch: &BatchReport, verdicts: &[Verdict]) -> String {
    render(&Document {
        title: "ttfx run",
        sections: &[Section {
            heading,
            batch,
            verdicts,
        }],
    })
}

/// The table rows (`| … |` lines) under the line that starts with `header`.
fn table<'a>(md: &'a str, header: &str) -> Vec<&'a str> {
    md.lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect()
}

#[test]
fn budgets_outcomes_and_percentiles_of_the_key_metrics() {
    let batch = test_fixture::batch();
    let verdicts = test_fixture::verdicts(&batch);
    let md = summary("sim/default", &batch, &verdicts);
    assert!(
        md.starts_with("## ttfx run\n\n❌ **1 of 2 budget(s) failed.**\n"),
        "{md}"
    );
    assert!(md.contains("### `sim/default`\n"), "{md}");
    assert!(
        md.contains("**Runs:** 3 — 3 completed, 0 aborted, 0 failed, 0 incomplete"),
        "{md}"
    );
    assert_eq!(
        table(&md, "| verdict |"),
        [
            format!(
                "| ✅ PASS | `ttft_visible.p90<=3s` | {} |",
                plain(&verdicts[0].describe())
            ),
            format!(
                "| ❌ FAIL | `ttft_visible.p50<=100ms` | {} |",
                plain(&verdicts[1].describe())
            ),
        ]
    );
    // Metric names in a sentence stay plain text, not emphasis.
    assert!(md.contains("p50 of ttft\\_visible\\_ms is"), "{md}");
    let rows = table(&md, "| metric |");
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r.split(" | ").next().unwrap().trim_start_matches("| "))
        .collect();
    assert_eq!(
        names,
        [
            "`ttft_ms`",
            "`ttft_visible_ms`",
            "`e2e_ms`",
            "`tpot_ms`",
            "`icl_ms`",
            "`decode_tokens_per_s`",
            "`gap.first_byte_ms`",
            "`gap.first_token_ms`"
        ]
    );
    let s = &batch.statistics["ttft_visible_ms"];
    assert!(
        rows.contains(
            &format!(
                "| `ttft_visible_ms` | 3 | {:.2} | {:.2} | {:.2} |",
                s.p50, s.p90, s.p99
            )
            .as_str()
        ),
        "{md}"
    );
    assert!(
        rows.contains(&"| `gap.first_token_ms` | 3 | 40.00 | 40.00 | 40.00 |"),
        "{md}"
    );
    // No link of any kind.
    for never in ["](", "<http", "href", "<a "] {
        assert!(!md.contains(never), "{never} in {md}");
    }
}

#[test]
fn all_passed_and_no_budgets_say_so() {
    let batch = test_fixture::batch();
    let verdicts: Vec<Verdict> = test_fixture::verdicts(&batch)
        .into_iter()
        .filter(|v| v.passed)
        .collect();
    let md = summary("t", &batch, &verdicts);
    assert!(md.contains("✅ **All 1 budget(s) passed.**"), "{md}");
    let md = summary("t", &batch, &[]);
    assert!(md.contains("No budgets were given."), "{md}");
    assert!(!md.contains("| verdict |"), "{md}");
}

/// A label chosen by a page: pipes that would split the table, backticks that would end
/// a code span, a line break that would start a heading, a link, HTML.
#[test]
fn a_hostile_label_stays_inside_its_code_span() {
    assert_eq!(code("a|b"), "`a\\|b`");
    assert_eq!(code("a`b"), "``a`b``");
    assert_eq!(code("`a``"), "``` `a`` ```");
    assert_eq!(code("a\n# b\r\x1b"), "`a\\n# b\\r\\x1b`");
    let evil = "x|`](http://e.test)\n# <script>alert(1)</script>[l](http://e.test)";
    let batch = test_fixture::batch();
    let verdicts = test_fixture::verdicts(&batch);
    let plain_md = summary("sim/default", &batch, &verdicts);
    let md = summary(evil, &batch, &verdicts);
    // The same lines as with a plain label: nothing was broken open.
    assert_eq!(md.lines().count(), plain_md.lines().count(), "{md}");
    assert_eq!(
        md.lines().find(|l| l.starts_with("### ")).unwrap(),
        "### ``x\\|`](http://e.test)\\n# <script>alert(1)</script>[l](http://e.test)``"
    );
    assert!(!md.lines().any(|l| l.starts_with("# ")), "{md}");
}

#[test]
fn many_batches_are_bounded() {
    let batch = test_fixture::batch();
    let sections: Vec<Section<'_>> = (0..100)
        .map(|_| Section {
            heading: "s",
            batch: &batch,
            verdicts: &[],
        })
        .collect();
    let md = render(&Document {
        title: "t",
        sections: &sections,
    });
    assert_eq!(md.matches("### ").count(), MAX_SECTIONS);
    assert!(md.contains("68 more batch(es) not summarized here"), "{md}");
    assert!(md.len() < 64 * 1024, "{} bytes", md.len());
}
