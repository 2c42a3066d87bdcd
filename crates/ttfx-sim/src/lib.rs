//! Simulated LLM, TTS and STT endpoints with known, controllable timing, at the paths the real
//! servers use (so an SDK's base URL can point here). Behaviour comes from a named
//! profile, overridable per request (query string or a `ttfx` object in the JSON body);
//! every response reports what the server actually did, measured on its own clock.
//!
//! It serves only simulated endpoints: it writes records through ttfx-records and meets
//! requests through the shared HTTP edge (ttfx-edge); it must not depend on the proxy,
//! the collector, the runner or `ttfx serve`, which mounts [`router`] at `/sim`.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::{FromRequest, FromRequestParts, OriginalUri, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use serde_json::Value;

use ttfx_core::ChatApi;
use ttfx_core::decode::DialectKind;

use ttfx_edge::arrival::Arrival;
use ttfx_edge::error::json_error;

use self::profile::Profile;
pub use self::state::SimState;

mod body;
mod deadline;
mod dialect;
mod front;
pub mod limits;
mod llm;
pub mod load;
pub mod profile;
mod query_chat;
mod realtime;
pub mod rng;
mod schedule;
mod sink;
mod state;
mod stt;
mod synth;
pub mod text;
mod tts;

/// Every API of `ChatApi` at its own path, the Realtime-style socket, and the TTS and STT
/// endpoints, serving `state`'s profiles.
pub fn router(state: Arc<SimState>) -> Router {
    ChatApi::ALL
        .into_iter()
        .fold(Router::new().route("/", get(list)), |router, api| {
            router.route(&format!("/{{profile}}/{}", api.path()), llm_route(api))
        })
        .route("/{profile}/v1/audio/speech", post(tts::handle))
        .route("/{profile}/v1/realtime", get(realtime::handle))
        .layer(DefaultBodyLimit::max(limits::MAX_BODY_BYTES))
        // After the layer above, so the upload's own, larger limit is the one it meets.
        .route(
            "/{profile}/v1/audio/transcriptions",
            post(stt::handle).layer(DefaultBodyLimit::max(limits::MAX_UPLOAD_BODY_BYTES)),
        )
        .with_state(state)
}

/// `GET /sim`: the profiles by name, the built-in ones first, for the lab page's picker
/// (so the page never keeps a copy of the list).
async fn list(State(state): State<Arc<SimState>>) -> Response {
    axum::Json(serde_json::json!({ "profiles": state.profile_names() })).into_response()
}

fn llm_route(api: ChatApi) -> MethodRouter<Arc<SimState>> {
    let route = post(move |call: Call| llm::handle(api, call));
    // `EventSource` can only GET: chat completions also answers a GET with its fields in
    // the query.
    if api == ChatApi::OpenAiChat {
        route.get(query_chat::handle)
    } else {
        route
    }
}

/// What every simulated endpoint reads from its request.
pub struct Call {
    pub state: Arc<SimState>,
    pub arrival: Arrival,
    /// The full path (for the record).
    pub path: String,
    /// The profile named in the path.
    pub profile: String,
    pub query: Vec<(String, String)>,
    /// Read once by [`Call::parse`], which leaves it empty: a request held in its queue
    /// does not keep its body.
    pub body: Bytes,
    /// Why the request is refused before its overrides are read (too many of them).
    refusal: Option<String>,
}

impl FromRequest<Arc<SimState>> for Call {
    type Rejection = Response;

    async fn from_request(req: Request, state: &Arc<SimState>) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let mut call = Call::head(&mut parts, state).await?;
        call.body = Bytes::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(call)
    }
}

impl Call {
    /// Everything but the body (left empty): for endpoints that read their body
    /// themselves (the transcription upload, read as it streams in).
    pub async fn head(parts: &mut Parts, state: &Arc<SimState>) -> Result<Self, Response> {
        let Path(profile) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        // Counted before they are split into strings.
        let pairs = parts
            .uri
            .query()
            .map_or(0, |q| q.split('&').filter(|pair| !pair.is_empty()).count());
        let (query, refusal) = if pairs > limits::MAX_OVERRIDES {
            let why = format!(
                "{pairs} query parameters, above the cap of {} overrides per request",
                limits::MAX_OVERRIDES
            );
            (Vec::new(), Some(why))
        } else {
            let Query(query) = Query::<Vec<(String, String)>>::from_request_parts(parts, state)
                .await
                .map_err(IntoResponse::into_response)?;
            (query, None)
        };
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
        Ok(Call {
            state: state.clone(),
            arrival,
            path,
            profile,
            query,
            body: Bytes::new(),
            refusal,
        })
    }
}

impl Call {
    /// The profile with the request's overrides; reads the body (and lets it go).
    pub fn parse(&mut self) -> Result<Parsed, Refusal> {
        if let Some(why) = &self.refusal {
            return Err(Refusal(StatusCode::BAD_REQUEST, why.clone()));
        }
        let body = std::mem::take(&mut self.body);
        parse(&self.state, &self.profile, &self.query, &body)
    }

    /// See [`front::hold`].
    pub async fn hold(
        &self,
        parsed: &Parsed,
        dialect: DialectKind,
        error_body: impl FnOnce(u16, &str) -> Value,
    ) -> Result<front::Front, Response> {
        front::hold(self, parsed, self.arrival.at, dialect, error_body).await
    }
}

/// A request's profile with its overrides applied, what its body says and its seed.
pub struct Parsed {
    pub profile: Profile,
    pub body: body::Body,
    pub seed: u64,
    /// The profile's deployment: the streams and syntheses it shares with the other
    /// requests to the same profile name (load.rs).
    pub deployment: Arc<load::Deployment>,
}

/// A request the simulator refuses: status and a message for a person.
pub struct Refusal(pub StatusCode, pub String);

/// Profile by name, then the body's `ttfx` overrides, then the query's (the query wins:
/// it is the easiest to change from a page).
pub fn parse(
    state: &SimState,
    name: &str,
    query: &[(String, String)],
    body: &[u8],
) -> Result<Parsed, Refusal> {
    let Some((mut profile, deployment)) = state.entry(name) else {
        return Err(Refusal(
            StatusCode::NOT_FOUND,
            format!(
                "unknown profile `{name}`; known: {}",
                state.profile_names().join(", ")
            ),
        ));
    };
    let body = body::read(body).map_err(|m| Refusal(StatusCode::BAD_REQUEST, m))?;
    let bad = |e: profile::BadOverride| Refusal(StatusCode::BAD_REQUEST, e.to_string());
    profile
        .apply(body.overrides.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(bad)?;
    profile
        .apply(query.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(bad)?;
    let seed = profile.seed.unwrap_or_else(rng::fresh_seed);
    Ok(Parsed {
        profile,
        body,
        seed,
        deployment,
    })
}

/// `Retry-After` for the statuses that invite a retry.
pub fn retry_after(status: u16) -> Option<HeaderValue> {
    matches!(status, 429 | 503 | 529).then(|| HeaderValue::from_static("1"))
}
