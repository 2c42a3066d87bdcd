//! How a simulated server behaves: named profiles and per-request overrides.
//!
//! Overrides come as `key=value` pairs from the query string, from a `ttfx` object in the
//! JSON body, or from a `[profiles.NAME]` table of the config file; one parser reads all
//! three, so a typo is the same clear error everywhere.

use std::fmt;
use std::time::Duration;

/// Whether reasoning text is streamed or only its time and count are visible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasoning {
    Streamed,
    Hidden,
}

/// How many visible tokens a reply has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Length {
    Fixed(usize),
    /// Uniform over [min, max].
    Uniform(usize, usize),
    /// exp(ln(median) + sigma·z), z standard normal; clamped to [1, MAX_TOKENS].
    LogNormal {
        median: f64,
        sigma: f64,
    },
}

/// How the bytes leave the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Each event as soon as it exists.
    Stream,
    /// Everything at the end (a JSON-mode or moderation step, a buffering gateway).
    Buffered,
    /// Blocks of exactly N bytes, the rest at the end (a proxy with an N-byte buffer).
    FlushEvery(usize),
}

/// An injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// An HTTP error status instead of a stream (429, 500, 503, 529).
    Status(u16),
    /// The dialect's in-band error event after `fail_after` tokens.
    InBand,
    /// The connection closed without the stream's end after `fail_after` tokens.
    Drop,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Held before the response headers (a request queue).
    pub queue: Duration,
    /// After the headers, before the first token.
    pub prefill: Duration,
    /// Added to `prefill` per prompt token.
    pub prefill_per_token: Duration,
    /// When set, the first token is due this long after the request arrived (at least
    /// after the queue), replacing the prefill terms.
    pub ttft: Option<Duration>,
    pub tokens_per_second: f64,
    /// Each inter-token interval is scaled by a uniform factor in [1 − jitter, 1 + jitter].
    pub jitter: f64,
    pub reasoning_tokens: usize,
    pub reasoning: Reasoning,
    pub tokens_per_chunk: usize,
    pub output_tokens: Length,
    pub delivery: Delivery,
    /// Token (LLM) or chunk (TTS) indices before which the stream pauses for `stall`;
    /// sorted, each once (at most `MAX_STALL_AT`).
    pub stall_at: Vec<usize>,
    pub stall: Duration,
    pub failure: Option<Failure>,
    /// Tokens (LLM) or audio chunks (TTS) sent before an in-band error or a drop; None:
    /// half of the reply.
    pub fail_after: Option<usize>,
    pub seed: Option<u64>,
    /// TTS: request arrival to the first audio chunk.
    pub ttfa: Duration,
    /// TTS: synthesis seconds per audio second after the first chunk.
    pub rtf: f64,
    pub audio_chunk_ms: u32,
    /// TTS: the clip's length; None: from the input text.
    pub audio_ms: Option<u32>,
    /// STT: upload complete to the first `transcript.text.delta`.
    pub stt_first_partial: Duration,
    /// STT: upload complete to the final text (`transcript.text.done`, or the whole
    /// non-streamed reply).
    pub stt_final: Duration,
    /// STT: words per `transcript.text.delta`.
    pub stt_words_per_delta: usize,
    /// STT: the text "recognised" (a simulator cannot recognise speech); None: the
    /// default sentence.
    pub transcript: Option<String>,
    /// Under load (load.rs): LLM streams of this profile that run at once; a stream past
    /// them waits, first come first served, before its prefill. None: no limit.
    pub max_batch: Option<usize>,
    /// Under load: ms added to the first token per other stream running when this one is
    /// admitted (queue depth → TTFT).
    pub load_ttft_ms: f64,
    /// Under load: each token interval × (1 + this × the other streams running then).
    pub load_tps_slope: f64,
    /// Under load: the TTS real-time factor × (1 + this × the other syntheses in flight).
    pub load_rtf_slope: f64,
}

use super::limits::{
    MAX_AUDIO_MS, MAX_BATCH, MAX_DELAY_MS, MAX_FLUSH_BYTES, MAX_LOAD_SLOPE, MAX_LOAD_TTFT_MS,
    MAX_STALL_AT, MAX_TOKENS, MAX_TOKENS_PER_CHUNK, MAX_TRANSCRIPT_BYTES, shown,
};

impl Profile {
    const fn base(prefill_ms: u64, tokens_per_second: f64, output_tokens: usize) -> Profile {
        Profile {
            queue: Duration::ZERO,
            prefill: Duration::from_millis(prefill_ms),
            prefill_per_token: Duration::ZERO,
            ttft: None,
            tokens_per_second,
            jitter: 0.0,
            reasoning_tokens: 0,
            reasoning: Reasoning::Streamed,
            tokens_per_chunk: 1,
            output_tokens: Length::Fixed(output_tokens),
            delivery: Delivery::Stream,
            stall_at: Vec::new(),
            stall: Duration::ZERO,
            failure: None,
            fail_after: None,
            seed: None,
            ttfa: Duration::from_millis(250),
            rtf: 0.25,
            audio_chunk_ms: 100,
            audio_ms: None,
            stt_first_partial: Duration::from_millis(300),
            stt_final: Duration::from_millis(700),
            stt_words_per_delta: 1,
            transcript: None,
            // No load model: a stream's timing does not depend on the others.
            max_batch: None,
            load_ttft_ms: 0.0,
            load_tps_slope: 0.0,
            load_rtf_slope: 0.0,
        }
    }
}

/// The built-in profiles; the first is the default. docs/design.md's worked example is the
/// pair `fast-start-slow-stream` / `slow-start-fast-stream` (they cross at ≈ 29 tokens).
pub fn builtin() -> Vec<(&'static str, Profile)> {
    let reasoning = Profile {
        reasoning_tokens: 180, // 3 s of thinking at 60 tok/s
        ..Profile::base(300, 60.0, 80)
    };
    vec![
        ("default", Profile::base(250, 40.0, 48)),
        ("fast-start-slow-stream", Profile::base(200, 30.0, 120)),
        ("slow-start-fast-stream", Profile::base(900, 110.0, 120)),
        ("reasoning", reasoning.clone()),
        (
            "hidden-reasoning",
            Profile {
                reasoning: Reasoning::Hidden,
                ..reasoning
            },
        ),
        (
            "buffered-pipeline",
            Profile {
                delivery: Delivery::Buffered,
                ..Profile::base(250, 40.0, 120)
            },
        ),
        (
            "proxy-buffering",
            Profile {
                delivery: Delivery::FlushEvery(4096),
                ..Profile::base(250, 40.0, 240)
            },
        ),
    ]
}

/// The override keys, for documentation and error messages.
pub const KEYS: &[&str] = &[
    "queue_ms",
    "prefill_ms",
    "prefill_per_token_ms",
    "ttft_ms",
    "tokens_per_second",
    "jitter",
    "reasoning_tokens",
    "reasoning",
    "tokens_per_chunk",
    "output_tokens",
    "buffered",
    "flush_bytes",
    "stall_at",
    "stall_ms",
    "fail",
    "fail_after",
    "seed",
    "ttfa_ms",
    "rtf",
    "audio_chunk_ms",
    "audio_ms",
    "stt_first_partial_ms",
    "stt_final_ms",
    "stt_words_per_delta",
    "transcript",
    "max_batch",
    "load_ttft_ms",
    "load_tps_slope",
    "load_rtf_slope",
];

/// A bad override: names the key, the value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadOverride(pub String);

impl fmt::Display for BadOverride {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadOverride {}

impl Profile {
    /// Applies `key=value` pairs in order (a later pair wins).
    pub fn apply<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), BadOverride> {
        for (key, value) in pairs {
            self.set(key, value)
                .map_err(|why| BadOverride(format!("override {key}={}: {why}", shown(value))))?;
        }
        Ok(())
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        match key {
            "queue_ms" => self.queue = millis(v)?,
            "prefill_ms" => self.prefill = millis(v)?,
            "prefill_per_token_ms" => self.prefill_per_token = millis(v)?,
            "ttft_ms" => self.ttft = Some(millis(v)?),
            "tokens_per_second" => self.tokens_per_second = number(v, 0.001, 100_000.0)?,
            "jitter" => self.jitter = number(v, 0.0, 1.0)?,
            "reasoning_tokens" => self.reasoning_tokens = count(v, 0, MAX_TOKENS)?,
            "reasoning" => {
                self.reasoning = match v {
                    "streamed" => Reasoning::Streamed,
                    "hidden" => Reasoning::Hidden,
                    _ => return Err("expected `streamed` or `hidden`".into()),
                }
            }
            "tokens_per_chunk" => self.tokens_per_chunk = count(v, 1, MAX_TOKENS_PER_CHUNK)?,
            "output_tokens" => self.output_tokens = length(v)?,
            "buffered" => {
                if flag(v)? {
                    self.delivery = Delivery::Buffered;
                } else if self.delivery == Delivery::Buffered {
                    self.delivery = Delivery::Stream;
                }
            }
            "flush_bytes" => {
                self.delivery = match count(v, 0, MAX_FLUSH_BYTES)? {
                    0 => Delivery::Stream,
                    n => Delivery::FlushEvery(n),
                }
            }
            "stall_at" => self.stall_at = stall_at(v)?,
            "stall_ms" => self.stall = millis(v)?,
            "fail" => {
                self.failure = match v {
                    "" | "none" => None,
                    "error" => Some(Failure::InBand),
                    "drop" => Some(Failure::Drop),
                    "429" | "500" | "503" | "529" => {
                        Some(Failure::Status(v.parse().map_err(|_| "not a status")?))
                    }
                    _ => return Err("expected 429, 500, 503, 529, error, drop or none".into()),
                }
            }
            "fail_after" => self.fail_after = Some(count(v, 0, MAX_TOKENS)?),
            "seed" => {
                self.seed = Some(
                    v.parse()
                        .map_err(|_| "expected an unsigned 64-bit integer")?,
                )
            }
            "ttfa_ms" => self.ttfa = millis(v)?,
            "rtf" => self.rtf = number(v, 0.0, 100.0)?,
            "audio_chunk_ms" => self.audio_chunk_ms = count(v, 10, 2000)? as u32,
            "audio_ms" => self.audio_ms = Some(count(v, 1, MAX_AUDIO_MS as usize)? as u32),
            "stt_first_partial_ms" => self.stt_first_partial = millis(v)?,
            "stt_final_ms" => self.stt_final = millis(v)?,
            "stt_words_per_delta" => self.stt_words_per_delta = count(v, 1, MAX_TOKENS_PER_CHUNK)?,
            // Not trimmed: the text is the client's, spaces included.
            "transcript" => self.transcript = Some(transcript(value)?),
            "max_batch" => self.max_batch = Some(count(v, 1, MAX_BATCH)?),
            "load_ttft_ms" => self.load_ttft_ms = number(v, 0.0, MAX_LOAD_TTFT_MS)?,
            "load_tps_slope" => self.load_tps_slope = number(v, 0.0, MAX_LOAD_SLOPE)?,
            "load_rtf_slope" => self.load_rtf_slope = number(v, 0.0, MAX_LOAD_SLOPE)?,
            _ => return Err(format!("unknown key; known: {}", KEYS.join(", "))),
        }
        Ok(())
    }
}

fn number(v: &str, min: f64, max: f64) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && (min..=max).contains(&x) => Ok(x),
        _ => Err(format!("expected a number in [{min}, {max}]")),
    }
}

fn millis(v: &str) -> Result<Duration, String> {
    Ok(Duration::from_secs_f64(
        number(v, 0.0, MAX_DELAY_MS)? / 1000.0,
    ))
}

fn count(v: &str, min: usize, max: usize) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("expected an integer in [{min}, {max}]")),
    }
}

/// Comma-separated indices, sorted and each kept once (a stall happens once before its
/// token however often it is named). The entries are counted before one is parsed.
fn stall_at(v: &str) -> Result<Vec<usize>, String> {
    if v.is_empty() {
        return Ok(Vec::new());
    }
    let entries = v.split(',').count();
    if entries > MAX_STALL_AT {
        return Err(format!(
            "{entries} entries, above the cap of {MAX_STALL_AT} stalls per reply"
        ));
    }
    let mut at = v
        .split(',')
        .map(|k| count(k.trim(), 0, MAX_TOKENS))
        .collect::<Result<Vec<_>, _>>()?;
    at.sort_unstable();
    at.dedup();
    Ok(at)
}

/// The transcript override: bounded, and not empty (an empty transcript has no delta to
/// time; OpenAI answers silence with an empty text, which a test can still ask for by a
/// single space).
fn transcript(v: &str) -> Result<String, String> {
    if v.len() > MAX_TRANSCRIPT_BYTES {
        return Err(format!(
            "{} bytes, above the cap of {MAX_TRANSCRIPT_BYTES} bytes per transcript",
            v.len()
        ));
    }
    if v.is_empty() {
        return Err("expected text (not empty)".into());
    }
    Ok(v.to_owned())
}

fn flag(v: &str) -> Result<bool, String> {
    match v {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

/// `N`, `MIN..MAX` (uniform) or `lognormal:MEDIAN:SIGMA`.
fn length(v: &str) -> Result<Length, String> {
    const FORMS: &str = "expected N, MIN..MAX or lognormal:MEDIAN:SIGMA";
    if let Some(rest) = v.strip_prefix("lognormal:") {
        let (median, sigma) = rest.split_once(':').ok_or(FORMS)?;
        return Ok(Length::LogNormal {
            median: number(median, 1.0, MAX_TOKENS as f64)?,
            sigma: number(sigma, 0.0, 3.0)?,
        });
    }
    if let Some((lo, hi)) = v.split_once("..") {
        let (lo, hi) = (count(lo, 1, MAX_TOKENS)?, count(hi, 1, MAX_TOKENS)?);
        if lo > hi {
            return Err(format!("{FORMS}, with MIN ≤ MAX"));
        }
        return Ok(Length::Uniform(lo, hi));
    }
    count(v, 1, MAX_TOKENS)
        .map(Length::Fixed)
        .map_err(|e| format!("{FORMS} ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default() -> Profile {
        builtin()[0].1.clone()
    }

    #[test]
    fn overrides_replace_profile_values_in_order() {
        let mut p = default();
        p.apply([
            ("ttft_ms", "5"),
            ("tokens_per_second", "2"),
            ("output_tokens", "3"),
            ("output_tokens", "10..20"),
            ("fail", "529"),
            ("stall_at", "3, 7"),
            ("flush_bytes", "512"),
            ("reasoning", "hidden"),
        ])
        .unwrap();
        assert_eq!(p.ttft, Some(Duration::from_millis(5)));
        assert_eq!(p.tokens_per_second, 2.0);
        assert_eq!(p.output_tokens, Length::Uniform(10, 20));
        assert_eq!(p.failure, Some(Failure::Status(529)));
        assert_eq!(p.stall_at, [3, 7]);
        assert_eq!(p.delivery, Delivery::FlushEvery(512));
        assert_eq!(p.reasoning, Reasoning::Hidden);
        p.apply([("buffered", "true")]).unwrap();
        assert_eq!(p.delivery, Delivery::Buffered);
        p.apply([("output_tokens", "lognormal:200:0.5")]).unwrap();
        assert!(matches!(p.output_tokens, Length::LogNormal { .. }));
    }

    #[test]
    fn load_keys_default_to_no_effect_and_parse_at_their_bounds() {
        for (_, p) in builtin() {
            assert_eq!(p.max_batch, None);
            assert_eq!(
                (p.load_ttft_ms, p.load_tps_slope, p.load_rtf_slope),
                (0.0, 0.0, 0.0)
            );
        }
        let mut p = default();
        p.apply([
            ("max_batch", "1"),
            ("load_ttft_ms", "20"),
            ("load_tps_slope", " 0.25 "),
            ("load_rtf_slope", "100"),
        ])
        .unwrap();
        assert_eq!(p.max_batch, Some(1));
        assert_eq!(
            (p.load_ttft_ms, p.load_tps_slope, p.load_rtf_slope),
            (20.0, 0.25, 100.0)
        );
        p.apply([("max_batch", "16383"), ("load_ttft_ms", "60000")])
            .unwrap();
        assert_eq!((p.max_batch, p.load_ttft_ms), (Some(16_383), 60_000.0));
        // Every key the parser reads is listed, so the unknown-key message names them.
        assert_eq!(KEYS.len(), 29);
        for key in [
            "max_batch",
            "load_ttft_ms",
            "load_tps_slope",
            "load_rtf_slope",
        ] {
            assert!(KEYS.contains(&key), "{key}");
        }
    }

    #[test]
    fn bad_overrides_name_key_value_and_rule() {
        let cases = [
            ("tokens_per_second", "0", "[0.001, 100000]"),
            ("output_tokens", "0", "expected N, MIN..MAX"),
            ("output_tokens", "9..3", "MIN ≤ MAX"),
            ("fail", "418", "expected 429, 500"),
            ("ttft_ms", "-1", "expected a number"),
            ("buffered", "maybe", "true or false"),
            ("nope", "1", "unknown key; known: queue_ms"),
            ("max_batch", "0", "expected an integer in [1, 16383]"),
            ("max_batch", "16384", "expected an integer in [1, 16383]"),
            ("max_batch", "-1", "expected an integer in [1, 16383]"),
            ("max_batch", "2.5", "expected an integer in [1, 16383]"),
            ("load_ttft_ms", "-5", "expected a number in [0, 60000]"),
            ("load_ttft_ms", "60001", "expected a number in [0, 60000]"),
            ("load_ttft_ms", "NaN", "expected a number in [0, 60000]"),
            ("load_tps_slope", "-0.1", "expected a number in [0, 100]"),
            ("load_tps_slope", "inf", "expected a number in [0, 100]"),
            ("load_tps_slope", "1e309", "expected a number in [0, 100]"),
            ("load_rtf_slope", "nan", "expected a number in [0, 100]"),
            ("load_rtf_slope", "100.5", "expected a number in [0, 100]"),
            ("load_rtf_slope", "", "expected a number in [0, 100]"),
        ];
        for (key, value, why) in cases {
            let err = default().apply([(key, value)]).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("override {key}={value}: ")),
                "{err}"
            );
            assert!(err.contains(why), "{err}");
        }
    }

    #[test]
    fn builtin_names_are_unique_and_match_the_design() {
        let all = builtin();
        let mut names: Vec<_> = all.iter().map(|(n, _)| *n).collect();
        names.dedup();
        assert_eq!(names.len(), all.len());
        let find = |n: &str| all.iter().find(|(name, _)| *name == n).unwrap().1.clone();
        let fast = find("fast-start-slow-stream");
        assert_eq!(
            (fast.prefill, fast.tokens_per_second),
            (Duration::from_millis(200), 30.0)
        );
        let slow = find("slow-start-fast-stream");
        assert_eq!(
            (slow.prefill, slow.tokens_per_second),
            (Duration::from_millis(900), 110.0)
        );
        assert_eq!(find("buffered-pipeline").delivery, Delivery::Buffered);
        assert!(find("reasoning").reasoning_tokens > 0);
    }
}
