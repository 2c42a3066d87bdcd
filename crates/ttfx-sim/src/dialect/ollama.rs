//! Ollama `/api/chat` and `/api/generate`: one JSON object per line, the last with
//! `done: true`, the counts and the durations in nanoseconds, measured here.

use serde_json::{Value, json};

use super::{Ctx, Encoder, End};
use crate::schedule::Channel;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Chat,
    Generate,
}

pub struct Ollama {
    ctx: Ctx,
    api: Api,
}

impl Ollama {
    pub fn new(ctx: Ctx, api: Api) -> Self {
        Ollama { ctx, api }
    }

    fn object(&self, content: &str, thinking: Option<&str>) -> Value {
        let mut v = json!({ "model": self.ctx.model, "created_at": rfc3339_now() });
        match self.api {
            Api::Chat => {
                let mut message = json!({ "role": "assistant", "content": content });
                if let Some(t) = thinking {
                    message["thinking"] = json!(t);
                }
                v["message"] = message;
            }
            Api::Generate => {
                v["response"] = json!(content);
                if let Some(t) = thinking {
                    v["thinking"] = json!(t);
                }
            }
        }
        v
    }
}

fn line(v: &Value) -> String {
    format!("{v}\n")
}

fn nanos(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

impl Encoder for Ollama {
    fn piece(&mut self, channel: Channel, text: &str) -> String {
        let mut v = match channel {
            Channel::Reasoning => self.object("", Some(text)),
            Channel::Visible => self.object(text, None),
        };
        v["done"] = json!(false);
        line(&v)
    }

    fn close(&mut self, end: &End) -> String {
        let mut v = self.object("", None);
        v["done"] = json!(true);
        v["done_reason"] = json!(end.finish_reason);
        v["total_duration"] = json!(nanos(end.total_ms));
        // Ollama's load_duration is the wait before the model can start: the queue here.
        v["load_duration"] = json!(nanos(end.queue_ms));
        v["prompt_eval_count"] = json!(self.ctx.prompt_tokens);
        v["prompt_eval_duration"] = json!(nanos(end.prefill_ms));
        v["eval_count"] = json!(end.completion_tokens());
        v["eval_duration"] = json!(nanos(end.decode_ms));
        line(&v)
    }

    fn error(&mut self, message: &str) -> String {
        line(&json!({ "error": message }))
    }
}

/// Now as RFC 3339 UTC with microseconds, like Ollama's `created_at`.
fn rfc3339_now() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(since.as_secs(), since.subsec_micros())
}

fn rfc3339(secs: u64, micros: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_dates() {
        assert_eq!(super::rfc3339(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            super::rfc3339(1_767_225_600 + 3661, 42),
            "2026-01-01T01:01:01.000042Z"
        );
        assert_eq!(
            super::rfc3339(951_782_400, 0),
            "2000-02-29T00:00:00.000000Z"
        );
    }
}
