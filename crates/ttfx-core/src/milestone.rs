//! The milestones of one measured request, in the order a user meets them.
//!
//! Every milestone is a time on the page's `performance.now()` clock, stored as
//! milliseconds since `request_start`. The names here are the report's field names, so
//! they are part of the public schema: change them only with a schema version bump.
//!
//! A voice turn's first four milestones (the user's speech and its transcription) and the
//! click or key press that submitted a typed prompt come before the request they lead
//! to, so they are the only ones that may be negative ([`Milestone::precedes_request`]).

use std::fmt;
use std::str::FromStr;

/// One observable moment in the life of a measured request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Milestone {
    /// The microphone's voice-activity detector heard the user start speaking (the
    /// first frame above its threshold).
    SpeechStart,
    /// The last frame of the user's speech: the VAD decides it once its hangover of
    /// silence has passed (`turn.speech_end_detected_ms`), but this is when they stopped.
    SpeechEnd,
    /// The first partial transcript arrived (a streamed transcription's first delta).
    SttFirstPartial,
    /// The final transcript arrived.
    SttFinal,
    /// The user's click or key press that sent the prompt (`ttfx run --submit`, a flow's
    /// `submit` step): the time to `request_start` is the UI's own delay before it sends.
    Submit,
    /// Just before `fetch` is called.
    RequestStart,
    /// The network boundary: the request's Resource Timing `responseStart`, when the
    /// engine's network stack got the response's first byte (its headers). Present where
    /// the engine gives the page an entry with it (same origin, or `Timing-Allow-Origin`).
    ResponseStart,
    /// The fetch promise resolved (status and headers known).
    Headers,
    /// First non-empty body chunk handed to the reader, before any parsing.
    FirstByte,
    /// First complete SSE event or NDJSON line.
    FirstEvent,
    /// First token on any channel (reasoning or visible).
    FirstToken,
    /// First non-empty visible answer text.
    FirstVisibleToken,
    /// First visible text inserted in the watched element.
    FirstDom,
    /// The page painted that text (Element Timing `paintTime`, where exposed): the
    /// rendering step's end, before the frame goes to the display.
    PaintTime,
    /// The frame holding that text presented (Element Timing `presentationTime`), or the
    /// probe's estimate of it (docs/metrics.md, `paint_method`).
    FirstPaint,
    /// First complete clause or sentence of visible text.
    FirstSentence,
    /// First TTS request sent.
    TtsRequest,
    /// First audio bytes received.
    FirstAudioByte,
    /// First buffer scheduled on the AudioContext.
    FirstAudioScheduled,
    /// First non-silent sample reaches the output.
    FirstAudioOut,
    /// Last token.
    LastToken,
    /// Stream closed.
    Done,
    /// The user abandoned the request (the AbortSignal fired).
    Aborted,
    /// The request failed.
    Error,
}

impl Milestone {
    /// Every milestone, in the order of docs/design.md's table.
    pub const ALL: [Milestone; 24] = [
        Milestone::SpeechStart,
        Milestone::SpeechEnd,
        Milestone::SttFirstPartial,
        Milestone::SttFinal,
        Milestone::Submit,
        Milestone::RequestStart,
        Milestone::ResponseStart,
        Milestone::Headers,
        Milestone::FirstByte,
        Milestone::FirstEvent,
        Milestone::FirstToken,
        Milestone::FirstVisibleToken,
        Milestone::FirstDom,
        Milestone::PaintTime,
        Milestone::FirstPaint,
        Milestone::FirstSentence,
        Milestone::TtsRequest,
        Milestone::FirstAudioByte,
        Milestone::FirstAudioScheduled,
        Milestone::FirstAudioOut,
        Milestone::LastToken,
        Milestone::Done,
        Milestone::Aborted,
        Milestone::Error,
    ];

    /// The milestone's position in [`Milestone::ALL`] (its declaration order).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether the milestone comes before the request by nature (a voice turn's speech
    /// and transcription, the user's submit), so its time since `request_start` is
    /// negative.
    pub const fn precedes_request(self) -> bool {
        matches!(
            self,
            Milestone::SpeechStart
                | Milestone::SpeechEnd
                | Milestone::SttFirstPartial
                | Milestone::SttFinal
                | Milestone::Submit
        )
    }

    /// The snake_case name used in reports, beacons and the lab page.
    pub const fn as_str(self) -> &'static str {
        match self {
            Milestone::SpeechStart => "speech_start",
            Milestone::SpeechEnd => "speech_end",
            Milestone::SttFirstPartial => "stt_first_partial",
            Milestone::SttFinal => "stt_final",
            Milestone::Submit => "submit",
            Milestone::RequestStart => "request_start",
            Milestone::ResponseStart => "response_start",
            Milestone::Headers => "headers",
            Milestone::FirstByte => "first_byte",
            Milestone::FirstEvent => "first_event",
            Milestone::FirstToken => "first_token",
            Milestone::FirstVisibleToken => "first_visible_token",
            Milestone::FirstDom => "first_dom",
            Milestone::PaintTime => "paint_time",
            Milestone::FirstPaint => "first_paint",
            Milestone::FirstSentence => "first_sentence",
            Milestone::TtsRequest => "tts_request",
            Milestone::FirstAudioByte => "first_audio_byte",
            Milestone::FirstAudioScheduled => "first_audio_scheduled",
            Milestone::FirstAudioOut => "first_audio_out",
            Milestone::LastToken => "last_token",
            Milestone::Done => "done",
            Milestone::Aborted => "aborted",
            Milestone::Error => "error",
        }
    }
}

impl fmt::Display for Milestone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name given to [`Milestone::from_str`] is not a milestone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMilestone(pub String);

impl fmt::Display for UnknownMilestone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown milestone `{}`", self.0)
    }
}

impl std::error::Error for UnknownMilestone {}

impl FromStr for Milestone {
    type Err = UnknownMilestone;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Milestone::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownMilestone(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for m in Milestone::ALL {
            assert!(seen.insert(m.as_str()), "duplicate name {m}");
            assert_eq!(m.as_str().parse::<Milestone>(), Ok(m));
        }
        assert_eq!(seen.len(), Milestone::ALL.len());
    }

    #[test]
    fn names_are_snake_case() {
        for m in Milestone::ALL {
            assert!(
                m.as_str()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_'),
                "{m} is not snake_case"
            );
        }
    }

    #[test]
    fn unknown_name_is_a_clear_error() {
        let err = "first_pixel".parse::<Milestone>().unwrap_err();
        assert_eq!(err.to_string(), "unknown milestone `first_pixel`");
    }

    #[test]
    fn all_is_in_the_order_a_user_meets_them() {
        for (i, m) in Milestone::ALL.into_iter().enumerate() {
            assert_eq!(m.index(), i, "{m}");
        }
        let mut sorted = Milestone::ALL;
        sorted.sort();
        assert_eq!(sorted, Milestone::ALL);
    }
}
