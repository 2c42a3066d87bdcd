//! [`Transcript`]: a stream's events folded into what a person asks about it.

use serde::Serialize;

use crate::decode::event::{ErrorClass, Event};
use crate::server_timing::{ServerTiming, Usage};

/// Everything a decoded stream said, folded.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Transcript {
    pub visible_text: String,
    pub reasoning_text: String,
    /// Reasoning happened that was not streamed (known from usage or a redacted block).
    pub hidden_reasoning: bool,
    /// How many reasoning tokens were hidden, when the server counted them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_reasoning_tokens: Option<u64>,
    pub tool_calls: Vec<ToolCall>,
    /// The last usage reported (counts are cumulative).
    pub usage: Option<Usage>,
    pub server_timings: Vec<ServerTiming>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioSummary>,
    pub errors: Vec<ErrorEntry>,
    /// The dialect's end marker arrived.
    pub done: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done_reason: Option<String>,
}

/// One tool call, its pieces joined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    pub index: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub arguments: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AudioSummary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_rate: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channels: Option<u16>,
    pub samples: u64,
    /// Decoded audio length, when the format is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// Compressed bytes passed through undecoded.
    pub encoded_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorEntry {
    pub class: ErrorClass,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub message: String,
}

impl Transcript {
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Transcript {
        let mut summary = Transcript::default();
        for event in events {
            summary.add(event);
        }
        summary
    }

    pub fn add(&mut self, event: &Event) {
        match event {
            Event::Text { text } => self.visible_text.push_str(text),
            Event::Reasoning { text } => self.reasoning_text.push_str(text),
            Event::HiddenReasoning { tokens } => {
                self.hidden_reasoning = true;
                if tokens.is_some() {
                    self.hidden_reasoning_tokens = *tokens;
                }
            }
            Event::ToolCall {
                index,
                id,
                name,
                arguments,
            } => {
                let call = match self.tool_calls.iter_mut().position(|c| c.index == *index) {
                    Some(at) => &mut self.tool_calls[at],
                    None => {
                        self.tool_calls.push(ToolCall {
                            index: *index,
                            id: None,
                            name: None,
                            arguments: String::new(),
                        });
                        let last = self.tool_calls.len() - 1;
                        &mut self.tool_calls[last]
                    }
                };
                if id.is_some() {
                    call.id.clone_from(id);
                }
                if name.is_some() {
                    call.name.clone_from(name);
                }
                call.arguments.push_str(arguments);
            }
            Event::Usage { usage } => self.usage = Some(usage.clone()),
            Event::ServerTimings { timings } => self.server_timings.extend(timings.iter().cloned()),
            Event::AudioFormat {
                sample_rate,
                channels,
                ..
            } => {
                let audio = self.audio.get_or_insert_with(AudioSummary::default);
                audio.sample_rate = Some(*sample_rate);
                audio.channels = Some(*channels);
                audio.update_duration();
            }
            Event::AudioSamples { samples } => {
                let audio = self.audio.get_or_insert_with(AudioSummary::default);
                audio.samples += samples.len() as u64;
                audio.update_duration();
            }
            Event::AudioEncoded { bytes } => {
                self.audio
                    .get_or_insert_with(AudioSummary::default)
                    .encoded_bytes += *bytes as u64;
            }
            Event::Error {
                class,
                code,
                message,
            } => self.errors.push(ErrorEntry {
                class: *class,
                code: code.clone(),
                message: message.clone(),
            }),
            Event::Done { reason } => {
                self.done = true;
                self.done_reason.clone_from(reason);
            }
        }
    }
}

impl AudioSummary {
    fn update_duration(&mut self) {
        if let (Some(rate), Some(channels)) = (self.sample_rate, self.channels)
            && rate > 0
            && channels > 0
        {
            let frames = self.samples as f64 / f64::from(channels);
            self.duration_ms = Some(frames * 1000.0 / f64::from(rate));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_text_tool_calls_usage_audio_and_done() {
        let events = [
            Event::Reasoning { text: "r".into() },
            Event::Text { text: "a".into() },
            Event::ToolCall {
                index: 3,
                id: Some("c".into()),
                name: Some("f".into()),
                arguments: "{".into(),
            },
            Event::Text { text: "b".into() },
            Event::ToolCall {
                index: 3,
                id: None,
                name: None,
                arguments: "}".into(),
            },
            Event::Usage {
                usage: Usage {
                    completion_tokens: Some(1),
                    ..Usage::default()
                },
            },
            Event::Usage {
                usage: Usage {
                    completion_tokens: Some(2),
                    ..Usage::default()
                },
            },
            Event::AudioFormat {
                sample_rate: 1000,
                channels: 2,
                bits_per_sample: 16,
            },
            Event::AudioSamples {
                samples: vec![0; 10],
            },
            Event::Done {
                reason: Some("stop".into()),
            },
        ];
        let s = Transcript::from_events(&events);
        assert_eq!(
            (s.visible_text.as_str(), s.reasoning_text.as_str()),
            ("ab", "r")
        );
        assert_eq!(s.tool_calls.len(), 1);
        assert_eq!(s.tool_calls[0].arguments, "{}");
        assert_eq!(s.tool_calls[0].name.as_deref(), Some("f"));
        assert_eq!(s.usage.unwrap().completion_tokens, Some(2));
        assert_eq!(s.audio.unwrap().duration_ms, Some(5.0));
        assert!(s.done);
        assert_eq!(s.done_reason.as_deref(), Some("stop"));
    }
}
