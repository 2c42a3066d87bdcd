//! The LLM → TTS handoff as the app lives it: visible text in, segments out, and the
//! moment each segment is handed to TTS, all on the page clock.
//!
//! ```ignore
//! let mut handoff = HandoffRecorder::new(SegmenterConfig::default(), request_start)?;
//! for segment in handoff.push_text(delta)? {
//!     start_tts(&segment.text);
//!     handoff.handed(segment.index)?;
//! }
//! ```

use ttfx_core::Milestone;
use ttfx_core::handoff::{self, Handoff, HandoffRecord, SegmentHandoff};
use ttfx_core::segment::{Segment, Segmenter, SegmenterConfig};
use ttfx_core::timeline::{Milestones, Timeline};

use crate::ProbeError;
use crate::clock::now_ms;

/// Segments the visible answer and records the handoff of each segment.
#[derive(Debug, Clone)]
pub struct HandoffRecorder {
    segmenter: Segmenter,
    record: HandoffRecord,
    /// Page time of `request_start`; every recorded time is relative to it.
    origin_ms: f64,
}

impl HandoffRecorder {
    /// `request_start_ms` is the LLM request's page time (`performance.now()`).
    pub fn new(config: SegmenterConfig, request_start_ms: f64) -> Result<Self, ProbeError> {
        if !request_start_ms.is_finite() {
            return Err(ProbeError::BadOption(format!(
                "requestStart must be a finite performance.now() time, got {request_start_ms}"
            )));
        }
        Ok(HandoffRecorder {
            segmenter: Segmenter::new(config),
            record: HandoffRecord::default(),
            origin_ms: request_start_ms,
        })
    }

    /// Feeds a visible text delta that arrived now; returns the segments it completed
    /// (times relative to `request_start`).
    pub fn push_text(&mut self, delta: &str) -> Result<Vec<Segment>, ProbeError> {
        Ok(self.push_text_at(delta, now_ms()?))
    }

    /// Feeds a delta that arrived at page time `at_ms` (e.g. the reader's timestamp).
    pub fn push_text_at(&mut self, delta: &str, at_ms: f64) -> Vec<Segment> {
        let segments = self.segmenter.push(delta, at_ms - self.origin_ms);
        self.keep(&segments);
        segments
    }

    /// The LLM stream ended now: returns the last segment, if text was left.
    pub fn llm_done(&mut self) -> Result<Option<Segment>, ProbeError> {
        let at = now_ms()? - self.origin_ms;
        self.record.llm_end_at_ms.get_or_insert(at);
        let last = self.segmenter.finish(at);
        self.keep(last.as_slice());
        Ok(last)
    }

    /// Segment `index` was handed to TTS now. Handing a segment the segmenter has not
    /// produced is a clear error; handing one twice keeps the first time.
    pub fn handed(&mut self, index: u32) -> Result<(), ProbeError> {
        let at = now_ms()? - self.origin_ms;
        self.handed_at(index, at)
    }

    /// Segment `index` was handed at `at_ms` since `request_start`.
    pub fn handed_at(&mut self, index: u32, at_ms: f64) -> Result<(), ProbeError> {
        let known = self.record.segments.len();
        let segment = self
            .record
            .segments
            .iter_mut()
            .find(|s| s.index == index)
            .ok_or_else(|| {
                ProbeError::BadOption(format!(
                    "segment {index} was never produced ({known} so far)"
                ))
            })?;
        segment.handed_at_ms.get_or_insert(at_ms);
        Ok(())
    }

    /// The record so far.
    pub fn record(&self) -> &HandoffRecord {
        &self.record
    }

    /// The verdict on the record so far.
    pub fn verdict(&self) -> Handoff {
        handoff::verdict(&self.record, None)
    }

    /// `first_sentence` (when the first segment was complete), if there is one.
    pub fn milestones(&self) -> Milestones {
        let mut m = Milestones::default();
        if let Some(first) = self.record.segments.first() {
            m.set(Milestone::FirstSentence, first.complete_at_ms);
        }
        m
    }

    /// Adds the record and `first_sentence` to `timeline` (same `request_start`).
    pub fn apply_to(&self, timeline: &mut Timeline) {
        for (m, at) in self.milestones().iter() {
            timeline.milestones.set(m, at);
        }
        timeline.handoff = Some(self.record.clone());
    }

    fn keep(&mut self, segments: &[Segment]) {
        self.record
            .segments
            .extend(segments.iter().map(SegmentHandoff::from));
    }
}
