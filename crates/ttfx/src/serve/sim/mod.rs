//! Simulated LLM and TTS endpoints with known, controllable timing, at the paths the real
//! servers use (so an SDK's base URL can point here). Behaviour comes from a named
//! profile, overridable per request (query string or a `ttfx` object in the JSON body);
//! every response reports what the server actually did, measured on its own clock.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, OriginalUri, Path, Query, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use serde_json::Value;

use ttfx_core::ChatApi;
use ttfx_core::decode::DialectKind;

use self::profile::Profile;
use super::AppState;
use super::arrival::Arrival;

mod deadline;
mod dialect;
mod front;
mod llm;
pub mod profile;
pub mod rng;
mod schedule;
mod sink;
mod synth;
mod text;
mod tts;

/// Every API of `ChatApi` at its own path, and the TTS endpoint.
pub fn router() -> Router<Arc<AppState>> {
    ChatApi::ALL
        .into_iter()
        .fold(Router::new(), |router, api| {
            router.route(&format!("/{{profile}}/{}", api.path()), llm_route(api))
        })
        .route("/{profile}/v1/audio/speech", post(tts::handle))
}

fn llm_route(api: ChatApi) -> MethodRouter<Arc<AppState>> {
    post(move |call: Call| llm::handle(api, call))
}

/// What every simulated endpoint reads from its request.
pub struct Call {
    pub state: Arc<AppState>,
    pub arrival: Arrival,
    /// The full path (for the record).
    pub path: String,
    /// The profile named in the path.
    pub profile: String,
    pub query: Vec<(String, String)>,
    pub body: Bytes,
}

impl FromRequest<Arc<AppState>> for Call {
    type Rejection = Response;

    async fn from_request(req: Request, state: &Arc<AppState>) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let Path(profile) = Path::<String>::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Query(query) = Query::<Vec<(String, String)>>::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let arrival = parts.extensions.get::<Arrival>().cloned().ok_or_else(|| {
            // Only reachable if the router is built without the arrival layer.
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "request without arrival stamp",
            )
                .into_response()
        })?;
        let path = parts
            .extensions
            .get::<OriginalUri>()
            .map_or_else(|| parts.uri.path().to_owned(), |u| u.path().to_owned());
        let body = Bytes::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Call {
            state: state.clone(),
            arrival,
            path,
            profile,
            query,
            body,
        })
    }
}

impl Call {
    pub fn parse(&self) -> Result<Parsed, Refusal> {
        parse(&self.state, &self.profile, &self.query, &self.body)
    }

    /// See [`front::hold`].
    pub async fn hold(
        &self,
        parsed: &Parsed,
        dialect: DialectKind,
        error_body: impl FnOnce(u16, &str) -> Value,
    ) -> Result<front::Front, Response> {
        front::hold(self, parsed, dialect, error_body).await
    }
}

/// A request's profile with its overrides applied, its JSON body and its seed.
pub struct Parsed {
    pub profile: Profile,
    pub body: Value,
    pub seed: u64,
}

/// A request the simulator refuses: status and a message for a person.
pub struct Refusal(pub StatusCode, pub String);

/// Profile by name, then the body's `ttfx` overrides, then the query's (the query wins:
/// it is the easiest to change from a page).
pub fn parse(
    state: &AppState,
    name: &str,
    query: &[(String, String)],
    body: &[u8],
) -> Result<Parsed, Refusal> {
    let Some(mut profile) = state.profile(name) else {
        return Err(Refusal(
            StatusCode::NOT_FOUND,
            format!(
                "unknown profile `{name}`; known: {}",
                state.profile_names().join(", ")
            ),
        ));
    };
    let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Default::default())
    } else {
        serde_json::from_slice(body).map_err(|e| {
            Refusal(
                StatusCode::BAD_REQUEST,
                format!("request body is not JSON: {e}"),
            )
        })?
    };
    let bad = |e: profile::BadOverride| Refusal(StatusCode::BAD_REQUEST, e.to_string());
    if let Some(ttfx) = body.get("ttfx") {
        let pairs = body_overrides(ttfx).map_err(|m| Refusal(StatusCode::BAD_REQUEST, m))?;
        profile
            .apply(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(bad)?;
    }
    profile
        .apply(query.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(bad)?;
    let seed = profile.seed.unwrap_or_else(rng::fresh_seed);
    Ok(Parsed {
        profile,
        body,
        seed,
    })
}

/// The body's `ttfx` object as key=value pairs: numbers and booleans as written, arrays
/// (for `stall_at`) joined with commas.
fn body_overrides(ttfx: &Value) -> Result<Vec<(String, String)>, String> {
    let Some(map) = ttfx.as_object() else {
        return Err("`ttfx` in the body must be an object of overrides".into());
    };
    map.iter()
        .map(|(k, v)| {
            let scalar = |v: &Value| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                _ => None,
            };
            let text = match v {
                Value::Array(items) => items
                    .iter()
                    .map(scalar)
                    .collect::<Option<Vec<_>>>()
                    .map(|v| v.join(",")),
                other => scalar(other),
            };
            text.map(|t| (k.clone(), t)).ok_or_else(|| {
                format!("override `ttfx.{k}` must be a string, number, boolean or array of them")
            })
        })
        .collect()
}

/// An error response with a JSON body.
pub fn json_error(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// `Retry-After` for the statuses that invite a retry.
pub fn retry_after(status: u16) -> Option<HeaderValue> {
    matches!(status, 429 | 503 | 529).then(|| HeaderValue::from_static("1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_overrides_accept_scalars_and_lists() {
        let v =
            serde_json::json!({"ttft_ms": 5, "buffered": true, "fail": "drop", "stall_at": [3, 7]});
        let mut pairs = body_overrides(&v).unwrap();
        pairs.sort();
        assert_eq!(
            pairs,
            [
                ("buffered".into(), "true".into()),
                ("fail".into(), "drop".into()),
                ("stall_at".into(), "3,7".into()),
                ("ttft_ms".into(), "5".into()),
            ]
        );
        assert!(body_overrides(&serde_json::json!({"x": {}})).is_err());
        assert!(body_overrides(&serde_json::json!(3)).is_err());
    }
}
