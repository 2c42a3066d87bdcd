//! Simulated LLM endpoints with known, controllable timing.
//!
//! Each response is scheduled on absolute deadlines (start + ttft + i / rate) so that
//! timer lateness on one token does not accumulate into the next.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use futures_util::stream;
use serde::Deserialize;
use serde_json::json;
use tokio::time::Instant;

/// How a simulated model behaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// Time from request to the first token.
    pub ttft: Duration,
    /// Decode rate after the first token.
    pub tokens_per_second: f64,
    /// Number of tokens in the reply.
    pub output_tokens: usize,
}

/// The named profiles; the first is the default.
pub const PROFILES: [(&str, Profile); 3] = [
    (
        "default",
        Profile {
            ttft: Duration::from_millis(250),
            tokens_per_second: 40.0,
            output_tokens: 48,
        },
    ),
    (
        "fast-start-slow-stream",
        Profile {
            ttft: Duration::from_millis(200),
            tokens_per_second: 30.0,
            output_tokens: 120,
        },
    ),
    (
        "slow-start-fast-stream",
        Profile {
            ttft: Duration::from_millis(900),
            tokens_per_second: 110.0,
            output_tokens: 120,
        },
    ),
];

fn profile(name: &str) -> Option<Profile> {
    PROFILES.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
}

/// Per-request overrides, given as query parameters.
#[derive(Debug, Default, Deserialize)]
pub struct Overrides {
    ttft_ms: Option<u64>,
    tokens_per_second: Option<f64>,
    output_tokens: Option<usize>,
}

impl Overrides {
    fn apply(&self, mut p: Profile) -> Result<Profile, String> {
        if let Some(ms) = self.ttft_ms {
            p.ttft = Duration::from_millis(ms);
        }
        if let Some(rate) = self.tokens_per_second {
            if !(rate.is_finite() && rate > 0.0 && rate <= 100_000.0) {
                return Err(format!(
                    "tokens_per_second must be in (0, 100000], got {rate}"
                ));
            }
            p.tokens_per_second = rate;
        }
        if let Some(n) = self.output_tokens {
            if n == 0 || n > 100_000 {
                return Err(format!("output_tokens must be in [1, 100000], got {n}"));
            }
            p.output_tokens = n;
        }
        Ok(p)
    }
}

pub fn router() -> Router {
    Router::new().route("/{profile}/v1/chat/completions", post(chat_completions))
}

async fn chat_completions(
    Path(name): Path<String>,
    Query(overrides): Query<Overrides>,
) -> Response {
    let Some(base) = profile(&name) else {
        let known: Vec<&str> = PROFILES.iter().map(|(n, _)| *n).collect();
        return error(
            StatusCode::NOT_FOUND,
            &format!("unknown profile `{name}`; known: {}", known.join(", ")),
        );
    };
    let p = match overrides.apply(base) {
        Ok(p) => p,
        Err(msg) => return error(StatusCode::BAD_REQUEST, &msg),
    };
    let start = Instant::now();
    let model = format!("ttfx-sim-{name}");
    let frames = stream::unfold(0usize, move |i| {
        let model = model.clone();
        async move {
            // Frames: n tokens, then one closing chunk, then [DONE].
            if i > p.output_tokens + 1 {
                return None;
            }
            let frame = if i < p.output_tokens {
                let at = start + p.ttft + Duration::from_secs_f64(i as f64 / p.tokens_per_second);
                tokio::time::sleep_until(at).await;
                let delta = if i == 0 {
                    json!({ "role": "assistant", "content": token(i) })
                } else {
                    json!({ "content": token(i) })
                };
                sse_data(&chunk(&model, delta, None))
            } else if i == p.output_tokens {
                sse_data(&chunk(&model, json!({}), Some("length")))
            } else {
                "data: [DONE]\n\n".to_owned()
            };
            Some((Ok::<_, std::convert::Infallible>(Bytes::from(frame)), i + 1))
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(frames))
        .unwrap_or_else(|e| error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))
}

fn chunk(model: &str, delta: serde_json::Value, finish: Option<&str>) -> serde_json::Value {
    json!({
        "id": "chatcmpl-ttfx-sim",
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
    })
}

fn sse_data(value: &serde_json::Value) -> String {
    format!("data: {value}\n\n")
}

/// The i-th token of the simulated reply: words of a fixed text, cycled.
fn token(i: usize) -> String {
    const WORDS: &[&str] = &[
        "Streaming",
        "feels",
        "fast",
        "when",
        "the",
        "first",
        "words",
        "arrive",
        "early,",
        "and",
        "slow",
        "when",
        "a",
        "proxy",
        "holds",
        "them",
        "back",
        "until",
        "the",
        "end.",
    ];
    let word = WORDS[i % WORDS.len()];
    if i == 0 {
        word.to_owned()
    } else {
        format!(" {word}")
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = json!({ "error": { "message": message, "type": "ttfx_sim_error" } });
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_profile_values() {
        let o = Overrides {
            ttft_ms: Some(5),
            tokens_per_second: Some(2.0),
            output_tokens: Some(3),
        };
        let p = o.apply(PROFILES[0].1).unwrap();
        assert_eq!(
            p,
            Profile {
                ttft: Duration::from_millis(5),
                tokens_per_second: 2.0,
                output_tokens: 3
            }
        );
    }

    #[test]
    fn bad_overrides_are_clear_errors() {
        let o = Overrides {
            tokens_per_second: Some(0.0),
            ..Default::default()
        };
        assert!(
            o.apply(PROFILES[0].1)
                .unwrap_err()
                .contains("tokens_per_second")
        );
        let o = Overrides {
            output_tokens: Some(0),
            ..Default::default()
        };
        assert!(
            o.apply(PROFILES[0].1)
                .unwrap_err()
                .contains("output_tokens")
        );
    }

    #[test]
    fn tokens_join_into_readable_text() {
        let text: String = (0..4).map(token).collect();
        assert_eq!(text, "Streaming feels fast when");
    }
}
