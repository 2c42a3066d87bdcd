//! The accept loop: at most `max_connections` connections served at once, and a request
//! head that must arrive whole within `head_timeout`.
//!
//! `axum::serve` has neither: a client that sends `GET / HTTP/1.1\r\n` and then nothing
//! held its connection (and a task) for as long as it stayed connected (measured: still
//! open after 70 s), so a few thousand such clients filled the process's file
//! descriptors. Here hyper's own HTTP/1 header-read timer closes such a connection, and
//! an idle keep-alive connection too (the timer runs while the next head is awaited);
//! the request body's own timer is `--body-timeout-ms` (a tower-http layer).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::Service;

/// Default for `--max-connections`: above `--max-concurrent`'s 4,096 streams (each on its
/// own connection in a browser's HTTP/1.1 world) with room for the lab page's and the
/// collector's own, and far below a process's usual 1 M descriptor hard limit.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10_000;

/// Default for `--head-timeout-ms`: a browser sends a request head in one write, so
/// seconds are already generous on any real network; 10 s leaves a slow mobile link
/// room, and is what a slow-loris client can hold a place for.
pub const DEFAULT_HEAD_TIMEOUT_MS: u64 = 10_000;

/// Default for `--body-timeout-ms`: a request body may go this long without a byte.
pub const DEFAULT_BODY_TIMEOUT_MS: u64 = 30_000;

/// How a server bounds its connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: u32,
    pub head_timeout: Duration,
}

/// Serves `app` on `listener` until the listener fails for good. Past `max_connections`,
/// new connections wait in the kernel's backlog until one ends (nothing is read from
/// them, so they cost the server nothing).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
) -> std::io::Result<()> {
    let places = Arc::new(Semaphore::new(limits.max_connections as usize));
    loop {
        let Ok(place) = places.clone().acquire_owned().await else {
            return Ok(());
        };
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of descriptors or a connection reset before accept: go on after a pause
            // rather than spin or stop serving everyone.
            Err(e) if is_transient(&e) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        // No Nagle: a streamed reply is a run of small writes (headers, then one event per
        // token), and Nagle's algorithm holds a small write back until the previous one
        // is acknowledged, which a client's delayed ACK puts off by up to 40 ms (measured:
        // the first body chunk reached the browser 42 ms after its record's send time).
        // A socket that refuses the option still serves, only with Nagle.
        let _ = tcp.set_nodelay(true);
        let app = app.clone();
        tokio::spawn(async move {
            // The peer address is the collector's rate-limit key (ConnectInfo).
            let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                let mut app = app.clone();
                async move { Ok::<_, Infallible>(app.call(req).await.unwrap_or_else(|e| match e {})) }
            });
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.head_timeout);
            // A connection that ends badly (reset, timed out head) is the client's affair.
            let _ = builder
                .serve_connection_with_upgrades(TokioIo::new(tcp), service)
                .await;
            drop(place);
        });
    }
}

/// Accept errors that concern one connection or a passing shortage, not the listener.
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock | TimedOut
    ) || matches!(e.raw_os_error(), Some(23 | 24 | 105 | 12)) // ENFILE, EMFILE, ENOBUFS, ENOMEM
}
