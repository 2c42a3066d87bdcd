//! A tap on the WebDriver wire: a loopback server that passes every command on to a real
//! driver unchanged, and reads the chat page's replies just before the page goes away.
//!
//! `ttfx run --webdriver URL` drives the browser itself, so a test cannot read the page it
//! measured; through the tap it can. Before a command that leaves the page (a navigation,
//! `POST /session/{id}/url`) or ends the session (`DELETE /session/{id}`), the tap asks the
//! driver for the text of every `#messages .assistant` element (the chat UI fixtures'
//! replies, e2e/chat-uis/README.md), then forwards the command. Each non-empty read is one
//! [`Page`]: what one load of the page showed when the runner left it.
//!
//! Nothing else is touched: commands and answers pass as bytes, and a session's BiDi socket
//! (its `webSocketUrl`) is the driver's own, which the runner connects to directly.
//!
//! ```ignore
//! let tap = DriverTap::start(Engine::Firefox)?;
//! // ttfx run --webdriver {tap.url()} --browser firefox --url … --inject
//! let pages = tap.take_pages();
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, Uri, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use serde_json::json;
use ttfx_webdriver::{Driver, Engine};

/// A reply as the page showed it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Reply {
    /// Its `textContent`.
    pub text: String,
    /// `data-state`: `done`, `error` or (never settled) `streaming`.
    pub state: String,
}

/// What one load of the page showed when the runner left it: its replies, in order.
pub type Page = Vec<Reply>;

/// Reads the replies once none is still streaming (a framework may flush its last
/// render a frame after the stream ended), or as they are after 5 s.
const READ_REPLIES: &str = "const done = arguments[arguments.length - 1];
    const started = performance.now();
    const read = () => [...document.querySelectorAll('#messages .assistant')]
      .map((r) => ({ text: r.textContent, state: r.dataset.state || '' }));
    const poll = () => {
      const replies = read();
      if (replies.every((r) => r.state !== 'streaming') || performance.now() - started > 5000) {
        done(replies);
      } else {
        setTimeout(poll, 20);
      }
    };
    poll();";

struct Shared {
    driver: String,
    client: Client<HttpConnector, Body>,
    pages: Mutex<Vec<Page>>,
}

/// The tap and the driver behind it; both stop when it is dropped.
pub struct DriverTap {
    url: String,
    shared: Arc<Shared>,
    // Dropped first: the server stops before its driver.
    _runtime: tokio::runtime::Runtime,
    _driver: Driver,
}

impl DriverTap {
    /// Starts `engine`'s driver (found as `ttfx run` finds it) and the tap in front of it,
    /// on an ephemeral loopback port.
    pub fn start(engine: Engine) -> anyhow::Result<DriverTap> {
        let driver =
            Driver::start(engine).with_context(|| format!("cannot start {}", engine.name()))?;
        // Its own runtime: the tap serves while the test's thread waits on `ttfx run`.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
            driver: driver.url().trim_end_matches('/').to_owned(),
            client: Client::builder(TokioExecutor::new()).build_http(),
            pages: Mutex::new(Vec::new()),
        });
        let listener =
            runtime.block_on(async { tokio::net::TcpListener::bind("127.0.0.1:0").await })?;
        let url = format!("http://{}", listener.local_addr()?);
        let app = Router::new().fallback(forward).with_state(shared.clone());
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(DriverTap {
            url,
            shared,
            _runtime: runtime,
            _driver: driver,
        })
    }

    /// The WebDriver URL to hand to `ttfx run --webdriver`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The pages read since the last call, in the order the runner left them.
    pub fn take_pages(&self) -> Vec<Page> {
        std::mem::take(&mut *self.shared.pages.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The session a command leaves the page of, if it does: `POST /session/{id}/url` or
/// `DELETE /session/{id}`.
fn leaving_session(method: &Method, path: &str) -> Option<String> {
    let rest = path.strip_prefix("/session/")?;
    match (method, rest.split_once('/')) {
        (&Method::POST, Some((id, "url"))) => Some(id.to_owned()),
        (&Method::DELETE, None) if !rest.is_empty() => Some(rest.to_owned()),
        _ => None,
    }
}

async fn forward(State(shared): State<Arc<Shared>>, mut request: Request) -> Response {
    if let Some(session) = leaving_session(request.method(), request.uri().path()) {
        match read_replies(&shared, &session).await {
            Ok(page) if !page.is_empty() => {
                if let Ok(mut pages) = shared.pages.lock() {
                    pages.push(page);
                }
            }
            // A blank page (the session's first navigation) shows no reply.
            Ok(_) => {}
            Err(e) => eprintln!("driver tap: cannot read the replies: {e:#}"),
        }
    }
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let uri: Uri = match format!("{}{path}", shared.driver).parse() {
        Ok(uri) => uri,
        Err(e) => return (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    *request.uri_mut() = uri;
    // The driver's own host, set from the URI: drivers refuse hosts they do not serve.
    request.headers_mut().remove(header::HOST);
    match shared.client.request(request).await {
        Ok(response) => response.map(Body::new),
        Err(e) => (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

/// The page's replies, through the driver (`execute/async` in `session`).
async fn read_replies(shared: &Shared, session: &str) -> anyhow::Result<Page> {
    let body = json!({ "script": READ_REPLIES, "args": [] }).to_string();
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("{}/session/{session}/execute/async", shared.driver))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))?;
    let response = tokio::time::timeout(Duration::from_secs(15), shared.client.request(request))
        .await
        .context("the driver did not answer within 15 s")??;
    let bytes = response.into_body().collect().await?.to_bytes();
    let answer: serde_json::Value = serde_json::from_slice(&bytes)?;
    serde_json::from_value(answer["value"].clone())
        .with_context(|| format!("the driver's answer: {answer}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_navigation_and_the_session_s_end_leave_the_page() {
        let post = Method::POST;
        assert_eq!(
            leaving_session(&post, "/session/abc/url").as_deref(),
            Some("abc")
        );
        assert_eq!(
            leaving_session(&Method::DELETE, "/session/abc").as_deref(),
            Some("abc")
        );
        // Reading the URL, a script, a new session or a closed window leave nothing.
        assert_eq!(leaving_session(&Method::GET, "/session/abc/url"), None);
        assert_eq!(leaving_session(&post, "/session/abc/execute/sync"), None);
        assert_eq!(leaving_session(&post, "/session"), None);
        assert_eq!(
            leaving_session(&Method::DELETE, "/session/abc/window"),
            None
        );
    }
}
