//! A `POST /collect` body → rows, or the one reason the whole body is refused.
//!
//! The body is one JSON document, a JSON array of them, or several documents one after
//! another (NDJSON: one per line). Each document is a field report (`"kind": "field"`,
//! `ttfx_core::field`), or a run or batch report (docs/report.md), whose runs are
//! turned into field reports with sample rate 1 and no page path. Every item is checked
//! before any is stored (the schema's rules, then `plausible`'s bounds): one bad item
//! refuses the body, naming the item and the problem.

use serde::Deserialize;
use serde_json::value::RawValue;
use ttfx_core::field::{FIELD_SCHEMA_VERSION, FieldContext, FieldReport, MAX_FIELD_REPORT_BYTES};
use ttfx_core::report::{BatchReport, ReportError, ReportFile, RunReport};

use super::db::{Row, Source};
use super::plausible;

/// Why a body was refused: the item (0-based, in the body's order) and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub item: Option<usize>,
    pub message: String,
}

fn refuse(item: Option<usize>, message: String) -> Refusal {
    Refusal { item, message }
}

/// Line numbers of offsets met in increasing order, counting each byte of the body once:
/// the time to name every item's line stays linear in the body (counting from the start
/// for each item made a body of tiny documents cost the square of its size, #30).
struct Lines<'a> {
    body: &'a str,
    counted_to: usize,
    line: usize,
}

impl<'a> Lines<'a> {
    fn new(body: &'a str) -> Lines<'a> {
        Lines {
            body,
            counted_to: 0,
            line: 1,
        }
    }

    /// The 1-based line of `offset`, which is not before the previous one asked.
    fn of(&mut self, offset: usize) -> usize {
        let offset = offset.max(self.counted_to);
        self.line += self.body.as_bytes()[self.counted_to..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.counted_to = offset;
        self.line
    }
}

/// The offset of the first non-whitespace byte at or after `start` (JSON's whitespace).
fn skip_space(body: &str, start: usize) -> usize {
    start
        + body.as_bytes()[start..]
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            .count()
}

/// The items of a body, each with the line it starts on.
fn items(body: &str) -> Result<Vec<(&RawValue, usize)>, Refusal> {
    let mut lines = Lines::new(body);
    let mut documents: Vec<(&RawValue, usize)> = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(body).into_iter::<&RawValue>();
    loop {
        let start = stream.byte_offset();
        match stream.next() {
            None => break,
            Some(Ok(raw)) => {
                // The offset before a value may sit on the whitespace before it.
                documents.push((raw, lines.of(skip_space(body, start))));
            }
            Some(Err(e)) => {
                let at = lines.of(skip_space(body, start));
                let item = documents.len();
                return Err(refuse(
                    Some(item),
                    format!("item {item} (line {at}): not JSON: {e}"),
                ));
            }
        }
    }
    let is_array = |raw: &RawValue| raw.get().starts_with('[');
    match documents.as_slice() {
        [] => Err(refuse(
            None,
            "empty body: expected a field report, a run or batch report, a JSON array of \
             them, or NDJSON (one per line)"
                .into(),
        )),
        [(array, _)] if is_array(array) => {
            let inner: Vec<&RawValue> = serde_json::from_str(array.get())
                .map_err(|e| refuse(None, format!("not a JSON array of reports: {e}")))?;
            if inner.is_empty() {
                return Err(refuse(None, "an empty array: no reports".into()));
            }
            Ok(inner.into_iter().map(|raw| (raw, 1)).collect())
        }
        many => match many.iter().position(|(raw, _)| is_array(raw)) {
            Some(i) => Err(refuse(
                Some(i),
                "an array must be the whole body (NDJSON lines are single reports)".into(),
            )),
            None => Ok(documents),
        },
    }
}

/// What decides how an item is read, looked at before the rest of it.
#[derive(Deserialize)]
struct Head {
    schema_version: Option<serde_json::Value>,
    kind: Option<serde_json::Value>,
}

/// Reads and checks every item of `body`, received at `received_unix_ms`.
pub fn parse(body: &str, received_unix_ms: f64) -> Result<Vec<Row>, Refusal> {
    let items = items(body)?;
    let several_lines = items.iter().any(|&(_, line)| line > 1);
    let mut rows = Vec::new();
    for (index, (raw, line)) in items.into_iter().enumerate() {
        let name = if several_lines {
            format!("item {index} (line {line})")
        } else {
            format!("item {index}")
        };
        let item_rows = item(raw.get(), received_unix_ms)
            .map_err(|e| refuse(Some(index), format!("{name}: {e}")))?;
        rows.extend(item_rows);
    }
    Ok(rows)
}

fn item(text: &str, received_unix_ms: f64) -> Result<Vec<Row>, String> {
    let head: Head = serde_json::from_str(text)
        .map_err(|e| format!("not a report (expected a JSON object): {e}"))?;
    let row = |report: FieldReport, source| Row {
        report,
        source,
        received_unix_ms,
    };
    match head.kind.as_ref().and_then(|k| k.as_str()) {
        Some("field") => {
            match head.schema_version.as_ref().and_then(|v| v.as_u64()) {
                Some(v) if v == u64::from(FIELD_SCHEMA_VERSION) => {}
                Some(_) | None => {
                    let found = head
                        .schema_version
                        .map_or("none".to_owned(), |v| v.to_string());
                    return Err(format!(
                        "unsupported field report schema_version {found} (this collector \
                         reads {FIELD_SCHEMA_VERSION})"
                    ));
                }
            }
            if text.len() > MAX_FIELD_REPORT_BYTES {
                return Err(format!(
                    "a field report of {} bytes (at most {MAX_FIELD_REPORT_BYTES})",
                    text.len()
                ));
            }
            let report: FieldReport = typed(text)?;
            report.validate().map_err(|e| e.to_string())?;
            plausible::check(&report)?;
            Ok(vec![row(report, Source::Field)])
        }
        Some("run" | "batch") => {
            let file = ReportFile::from_json(text).map_err(|e| match e {
                // Name the field of the wrong type: serde_json's own message does not.
                ReportError::Json(_) => match head.kind.as_ref().and_then(|k| k.as_str()) {
                    Some("run") => typed::<RunReport>(text).err(),
                    _ => typed::<BatchReport>(text).err(),
                }
                .map_or_else(|| e.to_string(), |m| format!("not a ttfx report: {m}")),
                other => other.to_string(),
            })?;
            let context = FieldContext {
                page_path: None,
                sample_rate: 1.0,
            };
            file.runs()
                .iter()
                .enumerate()
                .map(|(i, run)| {
                    let report = FieldReport::of_run(run, &context);
                    report
                        .validate()
                        .map_err(|e| e.to_string())
                        .and_then(|()| plausible::check(&report))
                        .map(|()| row(report, Source::Run))
                        .map_err(|e| format!("run {i}: {e}"))
                })
                .collect()
        }
        Some(other) => Err(format!(
            "unknown kind \"{other}\" (expected \"field\", \"run\" or \"batch\")"
        )),
        None => Err(match head.schema_version {
            None => "not a ttfx report: no schema_version and no kind".into(),
            Some(_) => "no kind (expected \"field\", \"run\" or \"batch\")".into(),
        }),
    }
}

/// `text` as a `T`, an error naming the field's path (`run.sample_rate: invalid type …`).
fn typed<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        }
    })
}

#[cfg(test)]
mod tests {
    use ttfx_core::Milestone;
    use ttfx_core::report::Run;
    use ttfx_core::timeline::Timeline;

    use super::*;

    fn field(ttft: f64) -> String {
        let mut t = Timeline::default();
        t.milestones.set(Milestone::RequestStart, 0.0);
        t.milestones.set(Milestone::FirstToken, ttft);
        t.milestones.set(Milestone::FirstVisibleToken, ttft);
        t.milestones.set(Milestone::Done, ttft + 10.0);
        let run = Run::new(None, Some("lab".into()), t).unwrap();
        let context = FieldContext {
            page_path: Some("/chat".into()),
            sample_rate: 0.5,
        };
        serde_json::to_string(&FieldReport::of_run(&run, &context)).unwrap()
    }

    #[test]
    fn one_object_an_array_and_ndjson_are_read() {
        let one = parse(&field(100.0), 1.0).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(
            one[0].report.run.metrics.get("ttft_ms").unwrap_or(f64::NAN),
            100.0
        );
        let array = format!("[{}, {}]", field(1.0), field(2.0));
        assert_eq!(parse(&array, 1.0).unwrap().len(), 2);
        let ndjson = format!("{}\n{}\n\n{}\n", field(1.0), field(2.0), field(3.0));
        let rows = parse(&ndjson, 1.0).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[2]
                .report
                .run
                .metrics
                .get("ttft_ms")
                .unwrap_or(f64::NAN),
            3.0
        );
    }

    #[test]
    fn a_bad_item_refuses_the_body_naming_it() {
        let bad_type = field(5.0).replace("\"sample_rate\":0.5", "\"sample_rate\":\"half\"");
        let ndjson = format!("{}\n{bad_type}\n", field(1.0));
        let e = parse(&ndjson, 1.0).unwrap_err();
        assert_eq!(e.item, Some(1));
        assert!(
            e.message
                .starts_with("item 1 (line 2): run.sample_rate: invalid type"),
            "{}",
            e.message
        );
        let e = parse("[{\"kind\": \"field\", \"schema_version\": 7}]", 1.0).unwrap_err();
        assert!(e.message.contains("schema_version 7"), "{}", e.message);
        let e = parse("{\"kind\": \"run\", \"schema_version\": 9}", 1.0).unwrap_err();
        assert!(
            e.message.contains("unsupported schema_version 9"),
            "{}",
            e.message
        );
        for (body, want) in [
            ("", "empty body"),
            ("[]", "empty array"),
            ("{\"kind\": \"trace\"}", "unknown kind"),
            ("{} [1]", "an array must be the whole body"),
            ("{\"a\": 1} {oops", "item 1 (line 1): not JSON"),
            ("42", "expected a JSON object"),
        ] {
            let e = parse(body, 1.0).unwrap_err();
            assert!(e.message.contains(want), "{body}: {}", e.message);
        }
    }
}
