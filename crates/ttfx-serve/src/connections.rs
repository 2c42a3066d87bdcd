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
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
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
        // The place goes with the socket itself, so a connection upgraded to a WebSocket
        // (which hyper hands over when its HTTP part ends) still holds it.
        let io = Counted {
            stream: tcp,
            _place: place,
        };
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
                .serve_connection_with_upgrades(TokioIo::new(io), service)
                .await;
        });
    }
}

/// An accepted connection, holding its place under the limit until it is dropped.
struct Counted {
    stream: TcpStream,
    _place: OwnedSemaphorePermit,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    // Forwarded so that hyper writes a body's bytes where they lie: without vectored
    // writes it copies every body into its own buffer first (a 4 MiB buffered reply
    // would be held twice; sim_limits measures it).
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
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

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    async fn ask(stream: &mut TcpStream) -> std::io::Result<String> {
        stream
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await?;
        let mut answer = vec![0; 256];
        let n = stream.read(&mut answer).await?;
        Ok(String::from_utf8_lossy(&answer[..n]).into_owned())
    }

    #[tokio::test]
    async fn clients_holding_connections_open_cannot_make_the_server_accept_more() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route("/", axum::routing::get(|| async { "ok" }));
        let limits = ConnectionLimits {
            max_connections: 2,
            head_timeout: Duration::from_secs(60),
        };
        let server = tokio::spawn(serve(listener, app, limits));
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut c = TcpStream::connect(addr).await.unwrap();
            assert!(ask(&mut c).await.unwrap().starts_with("HTTP/1.1 200"));
            held.push(c);
        }
        // The third connects (the kernel's backlog) but is not served while two are open.
        let mut third = TcpStream::connect(addr).await.unwrap();
        // 500 ms: a loopback answer takes well under a millisecond, so a served request
        // would have answered many times over.
        let waited = tokio::time::timeout(Duration::from_millis(500), ask(&mut third)).await;
        assert!(waited.is_err(), "served beyond the bound: {waited:?}");
        drop(held.pop());
        let mut answer = vec![0; 256];
        let n = tokio::time::timeout(Duration::from_secs(5), third.read(&mut answer))
            .await
            .expect("served once a place is free")
            .unwrap();
        assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"));
        server.abort();
    }
}
