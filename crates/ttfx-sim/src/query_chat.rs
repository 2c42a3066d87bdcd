//! `GET /sim/{profile}/v1/chat/completions?prompt=…`: the chat completions stream for a
//! client that can only GET without a body, a browser's `EventSource`. The request's
//! fields come from the query; they are turned into the JSON body the POST route reads,
//! so the reply (SSE, `data: [DONE]`, record, limits, overrides) is the POST's own.

use serde_json::{Value, json};

use ttfx_core::ChatApi;

use super::{Call, llm};
use axum::response::Response;

/// Query keys that are request fields, not profile overrides.
const FIELDS: [&str; 4] = ["prompt", "model", "max_tokens", "include_usage"];

pub async fn handle(mut call: Call) -> Response {
    let (fields, overrides): (Vec<_>, Vec<_>) = std::mem::take(&mut call.query)
        .into_iter()
        .partition(|(k, _)| FIELDS.contains(&k.as_str()));
    call.query = overrides;
    call.body = body(&fields).to_string().into();
    llm::handle(ChatApi::OpenAiChat, call).await
}

/// The POST body these fields stand for (a repeated key: the last one wins, as a JSON
/// object's repeated key would). A `max_tokens` that is not a count is sent as the string
/// it is, which the body reader ignores as it would in a POST.
fn body(fields: &[(String, String)]) -> Value {
    let mut body = json!({ "stream": true });
    for (key, value) in fields {
        match key.as_str() {
            "prompt" => body["messages"] = json!([{ "role": "user", "content": value }]),
            "model" => body["model"] = json!(value),
            "max_tokens" => {
                body["max_tokens"] = value
                    .trim()
                    .parse::<u64>()
                    .map_or_else(|_| json!(value), |n| json!(n));
            }
            "include_usage" => {
                body["stream_options"] =
                    json!({ "include_usage": value == "true" || value == "1" });
            }
            _ => {}
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn fields_become_the_post_body() {
        let b = body(&pairs(&[
            ("prompt", "hi there"),
            ("model", "m"),
            ("max_tokens", "7"),
            ("include_usage", "true"),
        ]));
        assert_eq!(b["messages"][0]["content"], "hi there");
        assert_eq!(b["model"], "m");
        assert_eq!(b["max_tokens"], 7);
        assert_eq!(b["stream_options"]["include_usage"], true);
        // Read by the same reader as a POST body.
        let read = super::super::body::read(b.to_string().as_bytes()).unwrap();
        assert_eq!(read.prompt_chars, "user".len() + "hi there".len());
        assert_eq!(read.max_tokens, Some(7));
        assert!(read.include_usage);
        let empty = body(&[]);
        assert!(empty.get("messages").is_none());
    }
}
