//! Where a simulated body's bytes go: the delivery mode (streamed, buffered, flushed in
//! N-byte blocks) and the record of what was sent when.
//!
//! Times are taken when a chunk has been handed to the HTTP body, so the record says
//! when the server actually let the bytes go, not when they were planned. The record
//! decodes the bytes it is given, so its milestones follow the same rules as the
//! probe's (a token counts as sent when the last byte of its event is).

use std::io;

use axum::body::Body;
use bytes::Bytes;
use futures_util::stream;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::profile::Delivery;
use ttfx_records::{RecordHandle, RecordOutcome, lock};

/// The client went away: stop producing.
#[derive(Debug)]
pub struct Gone;

type Item = Result<Bytes, io::Error>;

/// A streaming body fed from a channel. A small buffer: the producer should feel the
/// client's back-pressure rather than queue minutes of output.
pub fn body_channel() -> (mpsc::Sender<Item>, Body) {
    let (tx, rx) = mpsc::channel::<Item>(8);
    let body = stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (tx, Body::from_stream(body))
}

pub struct Sink {
    tx: mpsc::Sender<Item>,
    delivery: Delivery,
    pending: Vec<u8>,
    record: RecordHandle,
}

impl Sink {
    pub fn new(tx: mpsc::Sender<Item>, delivery: Delivery, record: RecordHandle) -> Self {
        Sink {
            tx,
            delivery,
            pending: Vec::new(),
            record,
        }
    }

    /// Waits for `deadline`; `Gone` at once if the client leaves first (the body's
    /// receiver is dropped with its connection), so a stream whose client left stops
    /// holding its place in the batch then, not at its next chunk.
    pub async fn until(&self, deadline: Instant) -> Result<(), Gone> {
        tokio::select! {
            () = super::deadline::until(deadline) => Ok(()),
            () = self.tx.closed() => Err(Gone),
        }
    }

    /// Waits for `work` unless the client leaves first (then `Gone`, and `work` is
    /// dropped: a wait for a slot in the batch leaves the queue).
    pub async fn unless_gone<T>(&self, work: impl Future<Output = T>) -> Result<T, Gone> {
        tokio::select! {
            out = work => Ok(out),
            () = self.tx.closed() => Err(Gone),
        }
    }

    /// Room for a buffered body of `bytes`, in one allocation: grown by doubling, the
    /// body would be copied as it grows and held up to twice over.
    pub fn reserve(&mut self, bytes: usize) {
        self.pending.reserve_exact(bytes);
    }

    pub async fn emit(&mut self, bytes: &[u8]) -> Result<(), Gone> {
        self.pending.extend_from_slice(bytes);
        match self.delivery {
            Delivery::Stream => self.send(self.pending.len()).await,
            Delivery::Buffered => Ok(()),
            Delivery::FlushEvery(n) => {
                while self.pending.len() >= n {
                    self.send(n).await?;
                }
                Ok(())
            }
        }
    }

    /// Sends the first `n` pending bytes as one chunk.
    async fn send(&mut self, n: usize) -> Result<(), Gone> {
        if n == 0 {
            return Ok(());
        }
        // All of it (a streamed event, a buffered body) moves without a copy.
        let chunk = if n == self.pending.len() {
            Bytes::from(std::mem::take(&mut self.pending))
        } else {
            Bytes::from(self.pending.drain(..n).collect::<Vec<u8>>())
        };
        self.tx.send(Ok(chunk.clone())).await.map_err(|_| Gone)?;
        lock(&self.record).chunk(Instant::now(), &chunk);
        Ok(())
    }

    /// Sends what is held and ends the body normally.
    pub async fn finish(mut self, outcome: RecordOutcome) {
        let result = self.send(self.pending.len()).await;
        let outcome = if result.is_err() {
            RecordOutcome::ClientGone
        } else {
            outcome
        };
        lock(&self.record).end(outcome, Instant::now());
    }

    /// Sends what is held, then breaks the connection: hyper aborts a body that yields an
    /// error, so the client sees the stream end without its terminating chunk.
    pub async fn drop_connection(mut self) {
        let _ = self.send(self.pending.len()).await;
        // Give the connection task a turn to write what it holds; bytes it has not
        // flushed when the error arrives are lost, as in a real crash.
        tokio::task::yield_now().await;
        let _ = self
            .tx
            .send(Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "ttfx sim: injected connection drop",
            )))
            .await;
        lock(&self.record).end(RecordOutcome::Dropped, Instant::now());
    }

    /// The client is gone.
    pub fn gone(self) {
        lock(&self.record).end(RecordOutcome::ClientGone, Instant::now());
    }
}
