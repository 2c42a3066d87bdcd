//! Where a simulated body's bytes go: the delivery mode (streamed, buffered, flushed in
//! N-byte blocks) and the record of what was sent when.
//!
//! Times are taken when a chunk has been handed to the HTTP body, so the record says
//! when the server actually let the bytes go, not when they were planned.

use std::io;

use axum::body::Body;
use bytes::Bytes;
use futures_util::stream;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::profile::Delivery;
use super::schedule::Channel;
use crate::serve::records::{Outcome, RecordHandle, lock};

/// What a piece of bytes carries, for the record's milestones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Token(Channel),
    Audio,
}

/// Sleeps until `deadline` unless it has passed: tokio's timer works in whole
/// milliseconds, so even an expired deadline would otherwise wait for the next tick.
pub async fn until(deadline: Instant) {
    if deadline > Instant::now() {
        tokio::time::sleep_until(deadline).await;
    }
}

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
    /// Marks whose bytes end at this offset of `pending`.
    marks: Vec<(usize, Mark)>,
    record: RecordHandle,
}

impl Sink {
    pub fn new(tx: mpsc::Sender<Item>, delivery: Delivery, record: RecordHandle) -> Self {
        Sink {
            tx,
            delivery,
            pending: Vec::new(),
            marks: Vec::new(),
            record,
        }
    }

    pub async fn emit(&mut self, bytes: &[u8], mark: Option<Mark>) -> Result<(), Gone> {
        self.pending.extend_from_slice(bytes);
        if let Some(mark) = mark {
            self.marks.push((self.pending.len(), mark));
        }
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
        let chunk: Vec<u8> = self.pending.drain(..n).collect();
        self.tx
            .send(Ok(Bytes::from(chunk)))
            .await
            .map_err(|_| Gone)?;
        let now = Instant::now();
        let mut r = lock(&self.record);
        r.chunk(now, n);
        // A token counts as sent when the last byte of its event is.
        let done = self.marks.iter().take_while(|(end, _)| *end <= n).count();
        for (_, mark) in self.marks.drain(..done) {
            match mark {
                Mark::Token(channel) => {
                    r.first("first_token", now);
                    if channel == Channel::Visible {
                        r.first("first_visible_token", now);
                    }
                    r.latest("last_token", now);
                }
                Mark::Audio => r.first("first_audio_byte", now),
            }
        }
        for (end, _) in &mut self.marks {
            *end -= n;
        }
        Ok(())
    }

    /// Sends what is held and ends the body normally.
    pub async fn finish(mut self, outcome: Outcome) {
        let result = self.send(self.pending.len()).await;
        let outcome = if result.is_err() {
            Outcome::ClientGone
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
        lock(&self.record).end(Outcome::Dropped, Instant::now());
    }

    /// The client is gone.
    pub fn gone(self) {
        lock(&self.record).end(Outcome::ClientGone, Instant::now());
    }
}
