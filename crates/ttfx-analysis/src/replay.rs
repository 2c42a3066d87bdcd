//! The page's observations replayed outside the browser: inject mode (`ttfx run
//! --inject`) records the calls the probe's front makes on its analysis, as JSON, and
//! `ttfx run` plays them into [`Runs`] in its own process. The same calls and the same
//! code as the Worker's, so a report made here equals the page's.
//!
//! A call is `[run, op, ...args]`, with the arguments of the [`crate::Analysis`] method
//! of the same JS name. A chunk batch's bytes travel as a string of code points 0–255
//! (one per byte; JSON escapes what it must), which the page makes without an encoder.

use serde_json::Value;

use ttfx_core::timeline::{Environment, ResourceTiming};

use crate::{AnalysisError, Runs};

/// Why a recorded call could not be played.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The page's value is shown cut to [`SHOWN_CHARS`]: a page chooses its size.
    #[error("ttfx replay: a call is [run, op, ...args], got {0}")]
    NotACall(String),
    #[error("ttfx replay: a run number, got {0}")]
    BadRun(String),
    #[error("ttfx replay: an op name, got {0}")]
    BadOp(String),
    #[error("ttfx replay: unknown call `{0}`")]
    UnknownCall(String),
    /// Argument `index` of `op` is not what the call takes.
    #[error("ttfx replay: `{op}` argument {index} must be {what}, got {got}")]
    BadArgument {
        op: String,
        index: usize,
        what: &'static str,
        got: String,
    },
    /// A page asked for a fault (`begin`'s last argument). Faults are for the probe's own
    /// containment tests in a page, where a panic only fails the Worker's call; here it
    /// would abort the runner, so no page may ask for one.
    #[error("ttfx replay: a page cannot inject a fault (`{0}`) into the runner")]
    FaultRefused(String),
    /// A page began more runs than it ended, past [`MAX_OPEN_RUNS`].
    #[error(
        "ttfx replay: a page may have at most {MAX_OPEN_RUNS} runs in progress; run {0} \
         begins past that (end or abort the others first)"
    )]
    TooManyRuns(u32),
    /// The call itself failed, as it would have in the page.
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
}

/// Where [`Runs::environment`] says the analysis ran, for replayed runs.
pub const SITE: &str = "runner";

/// At most this many characters of a page's value are shown in an error: enough to
/// recognise it, and a page that sends megabytes does not get megabytes of error text.
pub const SHOWN_CHARS: usize = 120;

/// Runs a page may have begun and not ended, in the runner. Runs are found by a linear
/// search (a page has a handful; the probe's wasm stays small), so without a cap a page
/// beginning 32,000 runs cost 16.8 s of the runner's time (release build), the square of
/// the count. A chat page streams one reply at a time, a few with retries or tools:
/// 64 is far above that.
pub const MAX_OPEN_RUNS: usize = 64;

/// `value` as JSON text, cut to [`SHOWN_CHARS`] characters (`…` marks a cut).
fn shown(value: &Value) -> String {
    shown_str(&value.to_string())
}

/// `text` cut to [`SHOWN_CHARS`] characters.
fn shown_str(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

struct Args<'a> {
    op: &'a str,
    values: &'a [Value],
}

impl Args<'_> {
    fn get(&self, i: usize) -> Option<&Value> {
        self.values.get(i).filter(|v| !v.is_null())
    }

    fn bad(&self, i: usize, what: &'static str) -> ReplayError {
        ReplayError::BadArgument {
            op: self.op.to_owned(),
            index: i,
            what,
            got: shown(self.values.get(i).unwrap_or(&Value::Null)),
        }
    }

    fn opt_string(&self, i: usize) -> Result<Option<String>, ReplayError> {
        match self.get(i) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(i, "a string")),
        }
    }

    fn string(&self, i: usize) -> Result<String, ReplayError> {
        self.opt_string(i)?.ok_or_else(|| self.bad(i, "a string"))
    }

    fn opt_f64(&self, i: usize) -> Result<Option<f64>, ReplayError> {
        match self.get(i) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| self.bad(i, "a finite number")),
        }
    }

    fn f64(&self, i: usize) -> Result<f64, ReplayError> {
        self.opt_f64(i)?
            .ok_or_else(|| self.bad(i, "a finite number"))
    }

    fn opt_bool(&self, i: usize) -> Result<Option<bool>, ReplayError> {
        match self.get(i) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.bad(i, "true or false")),
        }
    }

    fn opt_u32(&self, i: usize) -> Result<Option<u32>, ReplayError> {
        match self.get(i) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| self.bad(i, "a whole number")),
        }
    }

    fn numbers(&self, i: usize) -> Result<Vec<f64>, ReplayError> {
        let Some(Value::Array(items)) = self.get(i) else {
            return Err(self.bad(i, "an array of numbers"));
        };
        items
            .iter()
            .map(|v| {
                v.as_f64()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| self.bad(i, "an array of numbers"))
            })
            .collect()
    }

    fn bytes(&self, i: usize) -> Result<Vec<u8>, ReplayError> {
        let text = self.string(i)?;
        text.chars()
            .map(|c| {
                u8::try_from(u32::from(c)).map_err(|_| self.bad(i, "bytes (code points 0-255)"))
            })
            .collect()
    }

    fn bool(&self, i: usize) -> Result<bool, ReplayError> {
        self.opt_bool(i)?
            .ok_or_else(|| self.bad(i, "true or false"))
    }

    fn status(&self, i: usize) -> Result<u16, ReplayError> {
        self.opt_u32(i)?
            .and_then(|s| u16::try_from(s).ok())
            .ok_or_else(|| self.bad(i, "an HTTP status"))
    }

    /// `environment`'s arguments: what the page knows of its browser.
    fn environment(&self) -> Result<Environment, ReplayError> {
        Ok(Environment {
            engine: self.opt_string(0)?,
            engine_version: self.opt_string(1)?,
            user_agent: self.opt_string(2)?,
            cross_origin_isolated: self.opt_bool(3)?,
            timer_resolution_ms: self.opt_f64(4)?,
            concurrency: self.opt_u32(5)?,
            ..Environment::default()
        })
    }

    /// `resourceTiming`'s arguments: the request's Resource Timing entry.
    fn resource_timing(&self) -> Result<ResourceTiming, ReplayError> {
        Ok(ResourceTiming {
            request_start_ms: self.opt_f64(0)?,
            response_start_ms: self.opt_f64(1)?,
            response_end_ms: self.opt_f64(2)?,
            encoded_body_size: self.opt_f64(3)?.map(|v| v as u64),
            fetch_start_ms: self.opt_f64(4)?,
            domain_lookup_start_ms: self.opt_f64(5)?,
            domain_lookup_end_ms: self.opt_f64(6)?,
            connect_start_ms: self.opt_f64(7)?,
            connect_end_ms: self.opt_f64(8)?,
            next_hop_protocol: self.opt_string(9)?,
        })
    }
}

/// Plays one recorded call into `runs`; `finish` returns the report's JSON text (then,
/// after a newline, the field report's when the page asked for one).
pub fn apply(runs: &mut Runs, call: &Value) -> Result<Option<String>, ReplayError> {
    let (run, a) = parse_call(call)?;
    // Each arm reads its arguments in the order the method takes them (but `headers`'
    // status and `visibility`'s flag first), so the first bad one is the one reported.
    match a.op {
        "begin" => {
            let (dialect, id, label) = (a.opt_string(0)?, a.opt_string(1)?, a.opt_string(2)?);
            if let Some(fault) = a.opt_string(3)? {
                return Err(ReplayError::FaultRefused(shown(&Value::String(fault))));
            }
            if runs.in_progress() >= MAX_OPEN_RUNS && !runs.has(run) {
                return Err(ReplayError::TooManyRuns(run));
            }
            runs.begin_page(run, dialect.as_deref(), id, label, None)?
        }
        "request" => runs.request(
            run,
            a.opt_string(0)?,
            a.opt_string(1)?,
            a.opt_f64(2)?,
            a.opt_string(3)?,
        )?,
        "headers" => {
            let status = a.status(1)?;
            runs.headers(
                run,
                a.f64(0)?,
                status,
                a.opt_string(2)?.as_deref(),
                a.opt_string(3)?.as_deref(),
            )?
        }
        "chunks" => runs.chunks(run, &a.numbers(0)?, &a.bytes(1)?)?,
        "anomaly" => runs.anomaly(run, a.f64(0)?, &a.string(1)?, a.string(2)?)?,
        "end" => runs.end(run, a.f64(0)?)?,
        "abort" => runs.abort(run, a.f64(0)?)?,
        "networkError" => runs.network_error(run, a.f64(0)?, a.string(1)?)?,
        "observed" => runs.observed(run, &a.string(0)?, a.f64(1)?, a.opt_string(2)?.as_deref())?,
        // Whatever the page said, the analysis ran here.
        "environment" => runs.environment(run, a.environment()?, Some(SITE))?,
        "visibility" => {
            let hidden = a.bool(1)?;
            runs.visibility(run, a.f64(0)?, hidden)?
        }
        "resourceTiming" => runs.resource_timing(run, a.resource_timing()?)?,
        "resourceServerTiming" => {
            runs.resource_server_timing(run, a.string(0)?, a.opt_f64(1)?, a.opt_string(2)?)?
        }
        "finish" => {
            return Ok(Some(runs.finish_page(
                run,
                a.opt_string(0)?,
                a.opt_f64(1)?,
            )?));
        }
        other => return Err(ReplayError::UnknownCall(shown_str(other))),
    }
    Ok(None)
}

/// A call's run number, and its op with the arguments after it.
fn parse_call(call: &Value) -> Result<(u32, Args<'_>), ReplayError> {
    let Some([run, op, values @ ..]) = call.as_array().map(Vec::as_slice) else {
        return Err(ReplayError::NotACall(shown(call)));
    };
    let run = run
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| ReplayError::BadRun(shown(run)))?;
    let op = op.as_str().ok_or_else(|| ReplayError::BadOp(shown(op)))?;
    Ok((run, Args { op, values }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_recorded_stream_replays_into_the_report_the_page_would_get() {
        let mut runs = Runs::default();
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n";
        let calls = [
            json!([1, "begin", "auto", "ttfx-1", "lab", null]),
            json!([
                1,
                "request",
                "POST",
                "http://x/v1/chat/completions?key=secret",
                1.7e12,
                "xhr"
            ]),
            json!([
                1,
                "environment",
                "gecko",
                "140",
                "UA",
                false,
                1.0,
                1,
                "main_thread"
            ]),
            json!([1, "headers", 12.0, 200, "text/event-stream", null]),
            json!([1, "chunks", [20.5, body.len() as f64], body]),
            json!([1, "end", 30.0]),
            json!([1, "observed", "first_dom", 22.0, null]),
        ];
        for call in &calls {
            assert_eq!(
                apply(&mut runs, call).map_err(|e| e.to_string()),
                Ok(None),
                "{call}"
            );
        }
        let report = apply(&mut runs, &json!([1, "finish", null, null]))
            .expect("finish works")
            .expect("finish answers the report");
        let report: Value = serde_json::from_str(&report).expect("JSON");
        let timeline = &report["run"]["timeline"];
        assert_eq!(timeline["milestones"]["first_visible_token"], json!(20.5));
        assert_eq!(timeline["milestones"]["first_dom"], json!(22.0));
        assert_eq!(timeline["environment"]["analysis"], json!("runner"));
        assert_eq!(
            timeline["request"]["url"],
            json!("http://x/v1/chat/completions")
        );
        assert_eq!(timeline["request"]["transport"], json!("xhr"));
        assert!(!report.to_string().contains("secret"));
    }

    #[test]
    fn a_bad_call_is_a_clear_error() {
        let mut runs = Runs::default();
        let error = |runs: &mut Runs, call: Value| apply(runs, &call).unwrap_err().to_string();
        assert_eq!(
            error(&mut runs, json!({"op": "begin"})),
            r#"ttfx replay: a call is [run, op, ...args], got {"op":"begin"}"#
        );
        assert_eq!(
            error(&mut runs, json!([-1, "end"])),
            "ttfx replay: a run number, got -1"
        );
        assert_eq!(
            error(&mut runs, json!([1, 7])),
            "ttfx replay: an op name, got 7"
        );
        assert_eq!(
            error(&mut runs, json!([1, "explode"])),
            "ttfx replay: unknown call `explode`"
        );
        apply(&mut runs, &json!([1, "begin", null, null, null, null])).expect("begin");
        assert_eq!(
            error(&mut runs, json!([1, "chunks", [0.0, 1.0], "\u{100}"])),
            "ttfx replay: `chunks` argument 1 must be bytes (code points 0-255), got \"\u{100}\""
        );
        assert_eq!(
            error(&mut runs, json!([2, "end", 1.0])),
            "ttfx analysis: no run 2 in progress (begin it first)"
        );
    }

    #[test]
    fn a_page_beginning_a_hundred_thousand_runs_is_refused_past_the_cap() {
        let mut runs = Runs::default();
        let mut refused = 0;
        for run in 0..100_000u32 {
            match apply(&mut runs, &json!([run, "begin", null, null, null, null])) {
                Ok(_) => assert!((run as usize) < MAX_OPEN_RUNS, "run {run} began"),
                Err(e) => {
                    assert!(matches!(e, ReplayError::TooManyRuns(r) if r == run), "{e}");
                    refused += 1;
                }
            }
        }
        assert_eq!(refused, 100_000 - MAX_OPEN_RUNS);
        assert_eq!(runs.in_progress(), MAX_OPEN_RUNS);
        // Beginning a run again that is in progress is not a new one; finishing one
        // (its report or its error: either way it is forgotten) frees a place.
        apply(&mut runs, &json!([3, "begin", null, null, null, null])).expect("again");
        apply(&mut runs, &json!([0, "abort", 1.0])).expect("abort");
        let _ = apply(&mut runs, &json!([0, "finish", null, null]));
        assert_eq!(runs.in_progress(), MAX_OPEN_RUNS - 1);
        apply(
            &mut runs,
            &json!([100_000, "begin", null, null, null, null]),
        )
        .expect("a place");
    }

    /// The entry's times as the probe sends them (`resourceTiming`'s ten arguments):
    /// the analysis works out how long the browser held the request, and keeps only a
    /// protocol that reads as an ALPN id.
    #[test]
    fn the_entry_s_times_give_request_queued_and_an_odd_protocol_is_dropped() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n";
        let report = |protocol: Value| -> Value {
            let mut runs = Runs::default();
            for call in [
                json!([1, "begin", "auto", "r1", "lab", null]),
                json!([1, "request", "POST", "http://x/v1", 1.0, "fetch"]),
                json!([1, "environment", "chromium", "140", "ua", false, 0.1, 8]),
                json!([1, "headers", 480.0, 200, "text/event-stream", null]),
                json!([1, "chunks", [490.0, body.len() as f64], body]),
                json!([1, "end", 500.0]),
                // fetchStart 0.5; a new connection: DNS 1–2, connect 2–5; sent at 475.5.
                json!([
                    1,
                    "resourceTiming",
                    475.5,
                    478.0,
                    499.0,
                    60,
                    0.5,
                    1.0,
                    2.0,
                    2.0,
                    5.0,
                    protocol
                ]),
            ] {
                apply(&mut runs, &call).expect("a good call");
            }
            let text = apply(&mut runs, &json!([1, "finish", null, null]))
                .expect("finish")
                .expect("a report");
            serde_json::from_str(&text).expect("JSON")
        };
        let r = report(json!("http/1.1"));
        // (475.5 − 0.5) − 1 − 3 = 471 ms.
        assert_eq!(r["run"]["metrics"]["request_queued_ms"]["value"], 471.0);
        let entry = &r["run"]["timeline"]["resource_timing"];
        assert_eq!(entry["next_hop_protocol"], "http/1.1");
        assert_eq!(entry["connect_end_ms"], 5.0);
        let notes = r["run"]["metrics"]["notes"].to_string();
        assert!(notes.contains("per-host connection limit"), "{notes}");
        // A page's long or odd string is no protocol; the figure stands without it.
        for odd in [
            json!("h".repeat(4096)),
            json!("http/1.1\n\u{1b}[2J"),
            json!(""),
        ] {
            let r = report(odd);
            assert_eq!(
                r["run"]["timeline"]["resource_timing"]["next_hop_protocol"],
                Value::Null
            );
            assert_eq!(r["run"]["metrics"]["request_queued_ms"]["value"], 471.0);
        }
        // A protocol that is not a string is a clear error naming the argument.
        let mut runs = Runs::default();
        apply(&mut runs, &json!([1, "begin", null, null, null, null])).unwrap();
        let e = apply(
            &mut runs,
            &json!([
                1,
                "resourceTiming",
                1.0,
                2.0,
                3.0,
                4,
                0.5,
                0.5,
                0.5,
                0.5,
                0.5,
                11
            ]),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "ttfx replay: `resourceTiming` argument 9 must be a string, got 11"
        );
    }
}
