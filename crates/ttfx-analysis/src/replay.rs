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

use crate::Runs;

/// Where [`Runs::environment`] says the analysis ran, for replayed runs.
pub const SITE: &str = "runner";

struct Args<'a> {
    op: &'a str,
    values: &'a [Value],
}

impl Args<'_> {
    fn get(&self, i: usize) -> Option<&Value> {
        self.values.get(i).filter(|v| !v.is_null())
    }

    fn bad(&self, i: usize, what: &str) -> String {
        format!(
            "ttfx replay: `{}` argument {i} must be {what}, got {}",
            self.op,
            self.values.get(i).unwrap_or(&Value::Null)
        )
    }

    fn opt_string(&self, i: usize) -> Result<Option<String>, String> {
        match self.get(i) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(i, "a string")),
        }
    }

    fn string(&self, i: usize) -> Result<String, String> {
        self.opt_string(i)?.ok_or_else(|| self.bad(i, "a string"))
    }

    fn opt_f64(&self, i: usize) -> Result<Option<f64>, String> {
        match self.get(i) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| self.bad(i, "a finite number")),
        }
    }

    fn f64(&self, i: usize) -> Result<f64, String> {
        self.opt_f64(i)?
            .ok_or_else(|| self.bad(i, "a finite number"))
    }

    fn opt_bool(&self, i: usize) -> Result<Option<bool>, String> {
        match self.get(i) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.bad(i, "true or false")),
        }
    }

    fn opt_u32(&self, i: usize) -> Result<Option<u32>, String> {
        match self.get(i) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| self.bad(i, "a whole number")),
        }
    }

    fn numbers(&self, i: usize) -> Result<Vec<f64>, String> {
        let Some(Value::Array(items)) = self.get(i) else {
            return Err(self.bad(i, "an array of numbers"));
        };
        items
            .iter()
            .map(|v| v.as_f64().ok_or_else(|| self.bad(i, "an array of numbers")))
            .collect()
    }

    fn bytes(&self, i: usize) -> Result<Vec<u8>, String> {
        let text = self.string(i)?;
        text.chars()
            .map(|c| {
                u8::try_from(u32::from(c)).map_err(|_| self.bad(i, "bytes (code points 0-255)"))
            })
            .collect()
    }
}

/// Plays one recorded call into `runs`; `finish` returns the report's JSON text (then,
/// after a newline, the field report's when the page asked for one).
pub fn apply(runs: &mut Runs, call: &Value) -> Result<Option<String>, String> {
    let Some([run, op, values @ ..]) = call.as_array().map(Vec::as_slice) else {
        return Err(format!(
            "ttfx replay: a call is [run, op, ...args], got {call}"
        ));
    };
    let run = run
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("ttfx replay: a run number, got {run}"))?;
    let op = op
        .as_str()
        .ok_or_else(|| format!("ttfx replay: an op name, got {op}"))?;
    let a = Args { op, values };
    match op {
        "begin" => runs.begin_page(
            run,
            a.opt_string(0)?.as_deref(),
            a.opt_string(1)?,
            a.opt_string(2)?,
            a.opt_string(3)?.as_deref(),
        )?,
        "request" => runs.request(
            run,
            a.opt_string(0)?,
            a.opt_string(1)?,
            a.opt_f64(2)?,
            a.opt_string(3)?,
        )?,
        "headers" => {
            let status = a
                .opt_u32(1)?
                .and_then(|s| u16::try_from(s).ok())
                .ok_or_else(|| a.bad(1, "an HTTP status"))?;
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
        "environment" => {
            let env = Environment {
                engine: a.opt_string(0)?,
                engine_version: a.opt_string(1)?,
                user_agent: a.opt_string(2)?,
                cross_origin_isolated: a.opt_bool(3)?,
                timer_resolution_ms: a.opt_f64(4)?,
                concurrency: a.opt_u32(5)?,
                ..Environment::default()
            };
            // Whatever the page said, the analysis ran here.
            runs.environment(run, env, Some(SITE))?
        }
        "visibility" => {
            let hidden = a.opt_bool(1)?.ok_or_else(|| a.bad(1, "true or false"))?;
            runs.visibility(run, a.f64(0)?, hidden)?
        }
        "resourceTiming" => runs.resource_timing(
            run,
            ResourceTiming {
                request_start_ms: a.opt_f64(0)?,
                response_start_ms: a.opt_f64(1)?,
                response_end_ms: a.opt_f64(2)?,
                encoded_body_size: a.opt_f64(3)?.map(|v| v as u64),
            },
        )?,
        "resourceServerTiming" => {
            runs.resource_server_timing(run, a.string(0)?, a.opt_f64(1)?, a.opt_string(2)?)?
        }
        "finish" => {
            return runs
                .finish_page(run, a.opt_string(0)?, a.opt_f64(1)?)
                .map(Some);
        }
        other => return Err(format!("ttfx replay: unknown call `{other}`")),
    }
    Ok(None)
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
            assert_eq!(apply(&mut runs, call), Ok(None), "{call}");
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
        assert!(apply(&mut runs, &json!({"op": "begin"})).is_err());
        let unknown = apply(&mut runs, &json!([1, "explode"])).unwrap_err();
        assert!(unknown.contains("unknown call `explode`"), "{unknown}");
        apply(&mut runs, &json!([1, "begin", null, null, null, null])).expect("begin");
        let bad = apply(&mut runs, &json!([1, "chunks", [0.0, 1.0], "\u{100}"])).unwrap_err();
        assert!(bad.contains("code points 0-255"), "{bad}");
        let missing = apply(&mut runs, &json!([2, "end", 1.0])).unwrap_err();
        assert!(missing.contains("no run 2"), "{missing}");
    }
}
