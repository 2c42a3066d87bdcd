//! Raw bodies: plain text (each chunk's completed UTF-8 is a text delta) and audio
//! (WAV or headerless PCM16). The end of the body is the end marker.

use crate::decode::audio::{AudioKind, AudioStream, OPENAI_PCM};
use crate::decode::dialect::{ByteDialect, DialectKind};
use crate::decode::event::Event;
use crate::decode::text::Utf8Stream;

/// Plain text.
#[derive(Default)]
pub struct RawText {
    utf8: Utf8Stream,
}

impl ByteDialect for RawText {
    fn bytes(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        self.utf8.push(bytes, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.utf8.finish(out);
        out.push(Event::Done { reason: None });
    }
}

/// A raw audio body.
pub struct RawAudio {
    audio: AudioStream,
}

impl RawAudio {
    pub fn new(kind: AudioKind, out: &mut Vec<Event>) -> Self {
        RawAudio {
            audio: AudioStream::start(kind, out),
        }
    }
}

impl ByteDialect for RawAudio {
    fn bytes(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        self.audio.push(bytes, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.audio.finish(out);
        out.push(Event::Done { reason: None });
    }
}

/// The byte dialect for `kind` (None when `kind` is framed otherwise). Headerless PCM
/// announces its format right away, into `out`.
pub fn byte_dialect(kind: DialectKind, out: &mut Vec<Event>) -> Option<Box<dyn ByteDialect>> {
    Some(match kind {
        DialectKind::Text => Box::new(RawText::default()),
        DialectKind::Wav => Box::new(RawAudio::new(AudioKind::Wav, out)),
        DialectKind::Pcm16 => Box::new(RawAudio::new(OPENAI_PCM, out)),
        _ => return None,
    })
}
