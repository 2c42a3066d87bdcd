//! The runner's listener with a bound on its open connections: the pages a run opens
//! (some nobody here wrote) can reach its loopback port, and each connection costs a
//! task and buffers. At the bound, new connections wait in the kernel's backlog until
//! one closes.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// At most this many connections to the runner's server are open at once: its page,
/// the probe's files and the simulated streams of up to 32 sessions (`--concurrency`)
/// need a few each.
pub const MAX_CONNECTIONS: usize = 256;

/// A listener that accepts a connection only while fewer than its limit are open.
pub struct Bounded {
    listener: TcpListener,
    open: Arc<Semaphore>,
}

impl Bounded {
    pub fn new(listener: TcpListener, limit: usize) -> Bounded {
        Bounded {
            listener,
            open: Arc::new(Semaphore::new(limit)),
        }
    }
}

/// An accepted connection, holding its place under the limit until it is dropped.
pub struct Counted {
    stream: TcpStream,
    _place: OwnedSemaphorePermit,
}

impl axum::serve::Listener for Bounded {
    type Io = Counted;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Counted, std::net::SocketAddr) {
        loop {
            // The semaphore is never closed, so the error arm does not happen.
            let Ok(place) = self.open.clone().acquire_owned().await else {
                continue;
            };
            match self.listener.accept().await {
                Ok((stream, addr)) => {
                    return (
                        Counted {
                            stream,
                            _place: place,
                        },
                        addr,
                    );
                }
                // Out of file descriptors and the like: wait, as axum's own listener does.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
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

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
    async fn a_page_holding_connections_open_cannot_make_the_runner_accept_more() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        let server = tokio::spawn(async move {
            let _ = axum::serve(Bounded::new(listener, 2), app).await;
        });
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
