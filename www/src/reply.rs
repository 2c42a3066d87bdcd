//! Where the page shows a reply while it streams: the chat's message, or the voice turn
//! that also speaks it (`voice::VoicedSink`). Below `request`, which writes to one, and
//! `voice`, which is one.

/// Where the page shows a reply while it streams.
pub trait ReplySink {
    fn text(&self, piece: &str);
    fn reasoning(&self, piece: &str);
    fn error(&self, message: &str);
}
