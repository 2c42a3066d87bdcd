//! The server-wide limit on requests in flight at `/sim` and `/proxy`: past it a request
//! is answered at once with 503 and `Retry-After` instead of being served late along with
//! every other. A request is in flight from its arrival until its response body has
//! ended or been dropped (the client went away), so a stream counts for its whole length,
//! not only until its headers.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// `ttfx serve --max-concurrent`'s default. `cargo xtask bench` found every stream held
/// at 4,000 concurrent streams on a 2-core machine and most starving at 8,000 (docs/
/// serve.md); 4,096 serves the bench's 1,000 and the lab page's bursts with room, and
/// refuses what would otherwise make every stream late. A bigger machine raises it.
pub const DEFAULT_MAX_CONCURRENT: u32 = 4_096;

/// Seconds a refused client is told to wait: a simulated reply usually ends within
/// seconds, and the value the simulator's own injected 429/503 send.
const RETRY_AFTER_S: &str = "1";

/// The permits: one per request in flight.
#[derive(Clone)]
pub struct Limit {
    permits: Arc<Semaphore>,
    max: u32,
}

impl Limit {
    pub fn new(max: u32) -> Limit {
        Limit {
            permits: Arc::new(Semaphore::new(max as usize)),
            max,
        }
    }
}

/// Middleware: takes a permit or answers 503; the permit rides in the response body.
pub async fn limit(State(limit): State<Limit>, req: Request, next: Next) -> Response {
    let Ok(permit) = limit.permits.clone().try_acquire_owned() else {
        return refused(limit.max);
    };
    let res = next.run(req).await;
    res.map(|body| {
        Body::new(Guarded {
            inner: body,
            _permit: permit,
        })
    })
}

fn refused(max: u32) -> Response {
    let message = format!(
        "ttfx serve: {max} requests in flight, the server's limit (--max-concurrent); \
         retry after {RETRY_AFTER_S} s"
    );
    let body = serde_json::json!({ "error": { "message": message, "type": "overloaded" } });
    let mut res = crate::error::json_error(StatusCode::SERVICE_UNAVAILABLE, &body);
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_S));
    res
}

/// A response body that holds its request's permit until it is dropped: after its last
/// frame, or when the connection ends without it.
struct Guarded {
    inner: Body,
    _permit: OwnedSemaphorePermit,
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn the_permit_is_held_until_the_body_is_dropped() {
        let limit = Limit::new(1);
        let permit = limit.permits.clone().try_acquire_owned().unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        let stream = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        let mut body = Guarded {
            inner: Body::from_stream(stream),
            _permit: permit,
        };
        tx.send(Ok(Bytes::from_static(b"a"))).await.unwrap();
        assert!(body.frame().await.is_some());
        assert_eq!(limit.permits.available_permits(), 0, "held while streaming");
        drop(tx);
        assert!(body.frame().await.is_none());
        drop(body);
        assert_eq!(
            limit.permits.available_permits(),
            1,
            "given back with the body"
        );
        let res = refused(1);
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(res.headers()[header::RETRY_AFTER], "1");
    }
}
