//! What one simulated request may ask for. Every cap is checked where the overrides are
//! parsed or the reply is planned, before a byte of the reply is made, and a request over
//! one is refused with 400 naming the override, its value and the cap: never clamped
//! silently, never a panic. Together they bound what one request costs: its CPU time
//! grows with its tokens (at most 2 × [`MAX_TOKENS`]) or its audio (at most
//! [`MAX_AUDIO_MS`]), never with a product of overrides, and the bytes it holds with
//! [`MAX_HELD_BYTES`]. docs/serve.md ("Limits") lists them for users;
//! crates/ttfx/tests/sim_limits.rs sends absurd values and measures a request at the caps.

/// Tokens per channel of one reply (reasoning, answer), and the largest index `stall_at`
/// and `fail_after` may name. The longest outputs of current models are 64k–128k tokens;
/// a reply is made lazily, one chunk at a time, so this bounds time and CPU, not memory.
pub const MAX_TOKENS: usize = 100_000;

/// One delay override (`queue_ms`, `prefill_ms`, `prefill_per_token_ms`, `ttft_ms`,
/// `stall_ms`, `ttfa_ms`), in ms: 10 minutes, as long as a whole reply may last.
pub const MAX_DELAY_MS: f64 = 600_000.0;

/// The planned length of one reply, from the request's arrival to the deadline of its
/// last byte (queue, prefill or TTFT, every token interval with its jitter, every stall;
/// for TTS the first chunk and the synthesis of every later one), in ms. 10 minutes holds
/// a 100,000-token reply at 170 tokens/s or a 10-minute clip at real time, longer than
/// any latency experiment needs; without it `stall_at` × `stall_ms` or a slow decode rate
/// × many tokens could ask for days and hold a concurrency slot as long.
pub const MAX_REPLY_MS: f64 = 600_000.0;

/// Entries of `stall_at`. A stall pattern is written by a person or a page: a handful of
/// indices, a hundred for a stall every few tokens of a long reply. 1,000 is far above
/// that, and small enough to keep per request (8 KiB) and search per token.
pub const MAX_STALL_AT: usize = 1_000;

/// Tokens coalesced into one event (`tokens_per_chunk`). Servers and gateways that batch
/// put a few dozen tokens in an event; 1,000 keeps one event near 10 KiB, so a streamed
/// reply holds little (the body channel keeps 8 events in flight) and every event stays
/// far below the 1 MiB event limit of the decoder that records it. A whole reply in one
/// piece is `buffered`.
pub const MAX_TOKENS_PER_CHUNK: usize = 1_000;

/// Bytes one reply may hold before sending them: a `buffered` reply holds its whole body,
/// so its planned body may not pass this. 4 MiB is a 20,000-token chat reply or a minute
/// of 24 kHz PCM16 audio (2.9 MB; 3.8 MB as base64 SSE), far more than a buffering
/// gateway in front of a chat model holds in practice, and small enough that a thousand
/// concurrent buffered replies fit in a few GiB.
pub const MAX_HELD_BYTES: usize = 4 << 20;

/// `flush_bytes`: a proxy's buffer. nginx's default is 4–8 KiB and large settings are
/// tens of KiB; 256 KiB is above them all. A flushing reply holds less than one block
/// plus one event, and the body channel at most 8 blocks in flight: 2.3 MiB, under
/// [`MAX_HELD_BYTES`].
pub const MAX_FLUSH_BYTES: usize = 256 << 10;

/// A TTS clip's length (`audio_ms`, or 70 ms per input character when not given), in ms:
/// 10 minutes, 28.8 MB of PCM16 made 100–2,000 ms at a time. OpenAI's own endpoint takes
/// at most 4,096 characters, about 5 minutes at this rate.
pub const MAX_AUDIO_MS: u32 = 600_000;

/// The `transcript` override, in bytes: 16 KiB is several minutes of speech (about 2,500
/// words), longer than any utterance a voice agent waits on, and it is held once per
/// request and cut into deltas one at a time.
pub const MAX_TRANSCRIPT_BYTES: usize = 16 << 10;

/// The audio file of one simulated transcription (`file`), in bytes: OpenAI's documented
/// limit for `/v1/audio/transcriptions` ("File uploads are currently limited to 25 MB"),
/// so a client that works against OpenAI works here. The file is counted as it streams in
/// and never held: only its first [`WAV_PREFIX_BYTES`] are kept to read a WAV header.
pub const MAX_UPLOAD_BYTES: usize = 25 << 20;

/// Bytes of one form field other than the file (`model`, `language`, `prompt`, …): 64 KiB
/// holds OpenAI's 224-token prompt many times over; a field past it is refused rather than
/// held.
pub const MAX_FORM_FIELD_BYTES: usize = 64 << 10;

/// Form fields of one upload: OpenAI's endpoint knows about a dozen (`include[]` and
/// `timestamp_granularities[]` may repeat); 64 refuses a form of a million empty fields.
pub const MAX_FORM_FIELDS: usize = 64;

/// The whole multipart body of an upload: the file, then up to [`MAX_FORM_FIELDS`] fields
/// of [`MAX_FORM_FIELD_BYTES`] (4 MiB) and their part headers. axum refuses a body past it
/// while it streams in, before the per-field counts see it.
pub const MAX_UPLOAD_BODY_BYTES: usize = MAX_UPLOAD_BYTES + (5 << 20);

/// The head of an uploaded file kept to read a WAV header: the `fmt ` and `data` chunk
/// headers come first, after at most a few `LIST`/`bext` metadata chunks.
pub const WAV_PREFIX_BYTES: usize = 64 << 10;

/// Override pairs of one request, in its query string and in its body's `ttfx` object
/// (each counted on its own). There are 29 keys; 64 lets a page repeat some (a later one
/// wins) and refuses a hundred thousand pairs before they are split into strings.
pub const MAX_OVERRIDES: usize = 64;

/// A request body, in bytes (axum's default, stated here so it is documented): a
/// 500,000-token prompt at 4 characters a token. The body is read as it is parsed,
/// never into a JSON tree, so a body of small values costs no more than its bytes.
pub const MAX_BODY_BYTES: usize = 2 << 20;

/// One client message on the simulated Realtime socket (`/v1/realtime`), in bytes: the
/// socket's equivalent of a request body, so [`MAX_BODY_BYTES`]. A larger message (or
/// frame) closes the socket with 1009 "message too big", as RFC 6455 has it; messages are
/// parsed into typed fields, never into a JSON tree, so one costs about its own bytes.
pub const MAX_REALTIME_MESSAGE_BYTES: usize = MAX_BODY_BYTES;

/// `max_batch`: LLM streams of one profile running at once (load.rs). Serving engines
/// run a few hundred sequences per batch (vLLM's `max_num_seqs` defaults to 256 to 1,024,
/// SGLang's `max_running_requests` to a few thousand) and `ttfx serve` holds 4,096
/// requests in flight by default, so 16,383 is above any batch a test can fill. The
/// exact bound is 2^14 − 1: load.rs gives each stream 1/`max_batch` of
/// [`BATCH_PERMITS`] = 16,383 × 16,385, a semaphore's permits, and that split lets exactly
/// `max_batch` streams in for every value up to it.
pub const MAX_BATCH: usize = 16_383;

/// The permits of one profile's batch semaphore, P = `MAX_BATCH × (MAX_BATCH + 2)`,
/// which is 2^28 − 1. A stream with `max_batch` = m takes ⌊P / m⌋ of them: m streams fit
/// (m·⌊P/m⌋ ≤ P), and m + 1 do not, because ⌊P/m⌋ ≥ ⌊P/MAX_BATCH⌋ = MAX_BATCH + 2 is more
/// than the remainder P mod m < m ≤ MAX_BATCH. Below tokio's cap on a semaphore's
/// permits on every target (2^29 − 1 where `usize` is 32 bits), and within `u32` for
/// `acquire_many`.
pub const BATCH_PERMITS: u32 = (MAX_BATCH as u32) * (MAX_BATCH as u32 + 2);

/// `load_ttft_ms`, in ms added per other stream in the batch: a minute. A real engine's
/// first token waits tens to hundreds of ms per request prefilled ahead of it; a minute a
/// stream is far past that and keeps the term's arithmetic small.
pub const MAX_LOAD_TTFT_MS: f64 = 60_000.0;

/// `load_tps_slope` and `load_rtf_slope`: how much one more stream (synthesis) of the
/// batch slows each one. Measured engines slow a few percent per extra sequence (slopes
/// of 0.01–0.1); 100, an interval 101 times as long beside a single other stream, is far
/// past any of them.
pub const MAX_LOAD_SLOPE: f64 = 100.0;

/// What load may add to one reply, so a reply under load stays bounded like every other
/// (a model that saturates, documented in docs/serve.md, not a value clamped silently):
/// the queue-depth term of the first token (`load_ttft_ms` × others) saturates at
/// [`MAX_DELAY_MS`], as any one delay does, and the slowdown of a token interval or an
/// audio chunk's synthesis (1 + slope × others) at 1,000 times. Neither saturates in any
/// sweep a 2^14 batch allows with a real engine's slopes; both keep every deadline a
/// finite time after arrival whatever the number of streams in flight.
pub const MAX_LOAD_SLOWDOWN: f64 = 1_000.0;

/// A value in an error message: a refused override may be megabytes long, and the
/// message says what was refused without sending it back.
pub fn shown(value: &str) -> String {
    const SHOWN: usize = 48;
    if value.len() <= SHOWN {
        return value.to_owned();
    }
    let mut end = SHOWN;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &value[..end], value.len())
}

/// Realtime sockets open at once. Once upgraded, a socket holds no in-flight place (its
/// HTTP response has ended) and no connection place either (hyper hands the socket over),
/// so without this a client could open sockets until the process ran out of
/// descriptors. 1,024 is far above what one lab or a CI run opens (one per voice turn)
/// and far below a process's descriptors. Past it, the handshake gets 503 with
/// `Retry-After`.
pub const MAX_REALTIME_SOCKETS: usize = 1_024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_shown_cut() {
        assert_eq!(shown("12"), "12");
        let long = "0,".repeat(1000);
        let s = shown(&long);
        assert!(s.starts_with("0,0,0,"), "{s}");
        assert!(s.ends_with("… (2000 bytes)"), "{s}");
        assert!(s.len() < 80, "{s}");
        // Never cuts inside a character.
        let wide = "é".repeat(100);
        assert!(shown(&wide).starts_with(&"é".repeat(24)));
    }
}
