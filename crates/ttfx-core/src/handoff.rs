//! The LLM → TTS handoff: did the first segment leave for TTS while the answer was still
//! streaming, or did the pipeline wait for the whole reply?
//!
//! The record holds, per segment, when its last token arrived, when the segmenter could
//! tell it was complete and when the app handed it to TTS. The verdict rule (also in
//! `docs/metrics.md`):
//!
//! - `undetermined` when no segment was handed to TTS, when the end of the LLM stream is
//!   unknown, or when the first segment was only complete at the end of the stream (a
//!   one-sentence reply, or text that arrived all at once): no pipeline could have handed
//!   it earlier, so streaming and buffering look the same;
//! - `streaming` when the first segment was handed before the LLM stream ended;
//! - `buffered` otherwise: the handoff waited for the whole reply.
//!
//! `time_lost_ms` = first handoff − first segment complete: for a buffered pipeline the
//! wait for the rest of the reply, for a streaming one its own handoff delay.

use serde::{Deserialize, Serialize};

use crate::segment::Segment;

/// What the probe saw of the handoff.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HandoffRecord {
    /// Segments in answer order.
    #[serde(default)]
    pub segments: Vec<SegmentHandoff>,
    /// When the LLM's answer stream ended (its last token, else the stream's close).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_end_at_ms: Option<f64>,
}

/// One segment's times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SegmentHandoff {
    /// 0 for the answer's first segment.
    pub index: u32,
    /// Characters in the segment (no text: reports carry no answer content).
    pub chars: u32,
    /// When the delta holding its last character arrived.
    pub last_token_at_ms: f64,
    /// When the segmenter could tell it was complete.
    pub complete_at_ms: f64,
    /// When the app handed it to TTS, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handed_at_ms: Option<f64>,
}

impl From<&Segment> for SegmentHandoff {
    fn from(s: &Segment) -> Self {
        SegmentHandoff {
            index: s.index,
            chars: u32::try_from(s.text.chars().count()).unwrap_or(u32::MAX),
            last_token_at_ms: s.last_token_at_ms,
            complete_at_ms: s.complete_at_ms,
            handed_at_ms: None,
        }
    }
}

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandoffVerdict {
    Streaming,
    Buffered,
    Undetermined,
}

/// The handoff metrics of one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    pub verdict: HandoffVerdict,
    /// Segments recorded.
    pub segments: u32,
    /// First segment handed to TTS − first segment complete.
    pub time_lost_ms: Option<f64>,
    /// When the first segment was complete.
    pub first_complete_ms: Option<f64>,
    /// When the first segment was handed to TTS.
    pub first_handed_ms: Option<f64>,
    /// The end of the LLM stream the verdict compared against.
    pub llm_end_ms: Option<f64>,
    /// Why the verdict is `undetermined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Judges a record; `llm_end_fallback_ms` (the timeline's `last_token`) stands in when
/// the record does not say when the LLM stream ended.
pub fn verdict(record: &HandoffRecord, llm_end_fallback_ms: Option<f64>) -> Handoff {
    let first = record.segments.iter().min_by_key(|s| s.index);
    let llm_end = record.llm_end_at_ms.or(llm_end_fallback_ms);
    let first_handed = first.and_then(|s| s.handed_at_ms);
    let mut out = Handoff {
        verdict: HandoffVerdict::Undetermined,
        segments: u32::try_from(record.segments.len()).unwrap_or(u32::MAX),
        time_lost_ms: first.zip(first_handed).map(|(s, h)| h - s.complete_at_ms),
        first_complete_ms: first.map(|s| s.complete_at_ms),
        first_handed_ms: first_handed,
        llm_end_ms: llm_end,
        reason: None,
    };
    let reason = match (first, first_handed, llm_end) {
        (None, _, _) => "no segment was recorded",
        (Some(_), None, _) => "the first segment was not handed to TTS",
        (Some(_), Some(_), None) => "the end of the LLM stream is unknown",
        (Some(s), Some(_), Some(end)) if s.complete_at_ms >= end => {
            "the first segment was complete only when the LLM stream ended \
             (one-segment reply, or text that arrived at once)"
        }
        (Some(_), Some(handed), Some(end)) => {
            out.verdict = if handed < end {
                HandoffVerdict::Streaming
            } else {
                HandoffVerdict::Buffered
            };
            return out;
        }
    };
    out.reason = Some(reason.into());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(index: u32, complete: f64, handed: Option<f64>) -> SegmentHandoff {
        SegmentHandoff {
            index,
            chars: 20,
            last_token_at_ms: complete - 5.0,
            complete_at_ms: complete,
            handed_at_ms: handed,
        }
    }

    fn record(segments: Vec<SegmentHandoff>, end: Option<f64>) -> HandoffRecord {
        HandoffRecord {
            segments,
            llm_end_at_ms: end,
        }
    }

    #[test]
    fn first_segment_handed_before_the_end_is_streaming() {
        let r = record(
            vec![seg(0, 300.0, Some(302.0)), seg(1, 900.0, Some(901.0))],
            Some(1500.0),
        );
        let h = verdict(&r, None);
        assert_eq!(h.verdict, HandoffVerdict::Streaming);
        assert_eq!(h.time_lost_ms, Some(2.0));
        assert_eq!((h.segments, h.llm_end_ms), (2, Some(1500.0)));
        assert_eq!(h.reason, None);
    }

    #[test]
    fn handoff_after_the_end_is_buffered_and_the_wait_is_the_time_lost() {
        let r = record(
            vec![seg(0, 300.0, Some(1510.0)), seg(1, 900.0, Some(1510.0))],
            Some(1500.0),
        );
        let h = verdict(&r, None);
        assert_eq!(h.verdict, HandoffVerdict::Buffered);
        assert_eq!(h.time_lost_ms, Some(1210.0));
        // Handed exactly at the end is still after the reply was complete.
        let r = record(vec![seg(0, 300.0, Some(1500.0))], Some(1500.0));
        assert_eq!(verdict(&r, None).verdict, HandoffVerdict::Buffered);
    }

    #[test]
    fn no_chance_to_stream_is_undetermined_with_a_reason() {
        // One-sentence reply: complete only when the stream ended.
        let r = record(vec![seg(0, 1500.0, Some(1501.0))], Some(1500.0));
        let h = verdict(&r, None);
        assert_eq!(h.verdict, HandoffVerdict::Undetermined);
        assert!(h.reason.unwrap().contains("one-segment"));
        // The time lost is still reported: it is a fact either way.
        assert_eq!(h.time_lost_ms, Some(1.0));

        for (r, why) in [
            (record(vec![], Some(1.0)), "no segment"),
            (record(vec![seg(0, 300.0, None)], Some(900.0)), "not handed"),
            (record(vec![seg(0, 300.0, Some(301.0))], None), "unknown"),
        ] {
            let h = verdict(&r, None);
            assert_eq!(h.verdict, HandoffVerdict::Undetermined);
            assert!(h.reason.as_deref().unwrap().contains(why), "{h:?}");
        }
    }

    #[test]
    fn the_timelines_last_token_stands_in_for_an_unrecorded_end() {
        let r = record(vec![seg(0, 300.0, Some(301.0))], None);
        assert_eq!(verdict(&r, Some(900.0)).verdict, HandoffVerdict::Streaming);
        // The record's own end wins over the fallback.
        let r = record(vec![seg(0, 300.0, Some(301.0))], Some(200.0));
        assert_eq!(
            verdict(&r, Some(900.0)).verdict,
            HandoffVerdict::Undetermined
        );
    }

    #[test]
    fn the_first_segment_is_found_by_index_not_position() {
        let r = record(
            vec![seg(1, 900.0, Some(2000.0)), seg(0, 300.0, Some(2000.0))],
            Some(1500.0),
        );
        let h = verdict(&r, None);
        assert_eq!(h.verdict, HandoffVerdict::Buffered);
        assert_eq!(h.first_complete_ms, Some(300.0));
    }

    #[test]
    fn segments_convert_without_their_text() {
        let s = Segment {
            index: 3,
            text: "Héllo.".into(),
            last_token_at_ms: 1.0,
            complete_at_ms: 2.0,
        };
        let h = SegmentHandoff::from(&s);
        assert_eq!((h.index, h.chars, h.handed_at_ms), (3, 6, None));
        let json = serde_json::to_string(&h).unwrap();
        assert!(!json.contains("llo"), "{json}");
    }
}
