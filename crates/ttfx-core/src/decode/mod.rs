//! Stream decoding: bytes as they arrive → frames → normalized [`Event`]s.
//!
//! Two layers, each incremental and indifferent to where chunks break:
//!
//! - **framing** turns bytes into frames: Server-Sent Events per the WHATWG HTML "event
//!   stream interpretation" ([`sse`]), NDJSON lines ([`ndjson`]), or raw bytes
//!   ([`text`], [`audio`]);
//! - **dialects** ([`dialect`]) turn one provider's frames into [`Event`]s: text,
//!   reasoning, tool calls, usage, server timings, audio, errors, done.
//!
//! [`Decoder`] ties the two together, with [`auto`] detection from the content type and
//! the first frames. Bad input never panics: it becomes an [`Event::Error`] and decoding
//! goes on where the format allows, inside the memory bounds of [`Limits`].

pub mod audio;
pub mod auto;
pub mod base64;
pub mod decimal;
pub mod decoder;
pub mod dialect;
pub mod event;
pub mod framing;
pub mod json;
mod lines;
pub mod ndjson;
pub mod server_timing_header;
pub mod sse;
pub mod text;
pub mod transcript;
mod utf8;
pub mod wav;

pub use decoder::Decoder;
pub use dialect::DialectKind;
pub use event::{ErrorClass, Event, coalesce};
pub use framing::{FramingAnomaly, Limits};
pub use ndjson::{NdjsonFramer, NdjsonItem};
pub use sse::{SseEvent, SseFramer, SseItem};
pub use transcript::Transcript;
