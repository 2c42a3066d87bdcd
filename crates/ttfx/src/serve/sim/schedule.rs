//! The reply's timetable, fixed before the first byte: every chunk's deadline as an
//! offset from the request's arrival. The streamer sleeps until each absolute deadline
//! (arrival + offset), so a late timer wake-up delays one chunk and is not carried into
//! the next.

use std::time::Duration;

use super::profile::{Failure, Length, MAX_TOKENS, Profile, Reasoning};
use super::rng::Rng;
use super::text;

/// Which channel a token belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Reasoning,
    Visible,
}

/// One chunk: `tokens` tokens of one channel, due `at` after the request arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub at: Duration,
    pub channel: Channel,
    pub text: String,
    pub tokens: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// End of prefill: the first token (on any channel, hidden or not) is generated here.
    pub prefill_end: Duration,
    pub steps: Vec<Step>,
    /// Reasoning tokens generated (streamed or hidden).
    pub reasoning_tokens: usize,
    pub reasoning_hidden: bool,
    pub visible_tokens: usize,
    /// `length` when `max_tokens` cut the reply, else `stop`.
    pub finish_reason: &'static str,
    /// When the last token (on any channel, hidden or not) is generated.
    pub last_at: Duration,
    /// For an in-band error or a drop: steps sent before it, and when it happens.
    pub cut: Option<(usize, Duration)>,
}

/// What the request itself says.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request {
    pub prompt_tokens: usize,
    /// The client's `max_tokens` (any dialect's spelling), counting reasoning too.
    pub max_tokens: Option<usize>,
    /// The dialect has a reasoning channel; without one reasoning is hidden.
    pub reasoning_channel: bool,
}

pub fn plan(p: &Profile, req: Request, rng: &mut Rng) -> Plan {
    let wanted = match p.output_tokens {
        Length::Fixed(n) => n,
        Length::Uniform(lo, hi) => rng.range(lo, hi),
        Length::LogNormal { median, sigma } => {
            let x = (median.ln() + sigma * rng.normal()).exp();
            x.round().clamp(1.0, MAX_TOKENS as f64) as usize
        }
    };
    let cap = req.max_tokens.unwrap_or(usize::MAX);
    let reasoning_tokens = p.reasoning_tokens.min(cap);
    let visible_tokens = wanted.min(cap - reasoning_tokens);
    let finish_reason = if reasoning_tokens + visible_tokens < p.reasoning_tokens + wanted {
        "length"
    } else {
        "stop"
    };
    let reasoning_hidden = p.reasoning == Reasoning::Hidden || !req.reasoning_channel;

    let prefill_end = match p.ttft {
        Some(ttft) => ttft.max(p.queue),
        None => p.queue + p.prefill + p.prefill_per_token * req.prompt_tokens as u32,
    };
    // Deadline of generated token i (reasoning first, then visible), in seconds after
    // prefill; a stall before token k shifts k and everything after it.
    let total = reasoning_tokens + visible_tokens;
    let base = 1.0 / p.tokens_per_second;
    let mut deadlines = Vec::with_capacity(total + 1);
    let mut t = prefill_end.as_secs_f64();
    for i in 0..=total {
        if p.stall_at.contains(&i) {
            t += p.stall.as_secs_f64();
        }
        deadlines.push(Duration::from_secs_f64(t));
        let scale = 1.0 + p.jitter * (2.0 * rng.unit() - 1.0);
        t += base * scale;
    }

    let mut steps: Vec<Step> = Vec::new();
    let mut emitted = 0usize;
    let mut cut_token = None;
    let streamed_tokens = visible_tokens
        + if reasoning_hidden {
            0
        } else {
            reasoning_tokens
        };
    let fail_after = match p.failure {
        Some(Failure::InBand | Failure::Drop) => Some(p.fail_after.unwrap_or(streamed_tokens / 2)),
        _ => None,
    };
    for (i, &at) in deadlines.iter().enumerate().take(total) {
        let channel = if i < reasoning_tokens {
            Channel::Reasoning
        } else {
            Channel::Visible
        };
        if channel == Channel::Reasoning && reasoning_hidden {
            continue;
        }
        if fail_after.is_some_and(|n| emitted >= n) {
            cut_token = Some(i);
            break;
        }
        let word = match channel {
            Channel::Reasoning => text::reasoning_word(i),
            Channel::Visible => text::word(i - reasoning_tokens),
        };
        emitted += 1;
        match steps.last_mut() {
            Some(s) if s.channel == channel && s.tokens < p.tokens_per_chunk => {
                s.text.push_str(&word);
                s.tokens += 1;
                s.at = at;
            }
            _ => steps.push(Step {
                at,
                channel,
                text: word,
                tokens: 1,
            }),
        }
    }
    let cut = fail_after.map(|_| {
        let at = deadlines
            .get(cut_token.unwrap_or(total))
            .copied()
            .unwrap_or(prefill_end);
        (steps.len(), at)
    });
    let last_at = match total {
        0 => prefill_end,
        n => deadlines[n - 1],
    };
    Plan {
        prefill_end,
        steps,
        last_at,
        reasoning_tokens,
        reasoning_hidden,
        visible_tokens,
        finish_reason,
        cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::sim::profile::builtin;

    fn profile(pairs: &[(&str, &str)]) -> Profile {
        let mut p = builtin()[0].1.clone();
        p.apply(pairs.iter().copied()).unwrap();
        p
    }

    fn req() -> Request {
        Request {
            prompt_tokens: 10,
            max_tokens: None,
            reasoning_channel: true,
        }
    }

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }

    #[test]
    fn deadlines_are_absolute_from_arrival() {
        let p = profile(&[
            ("queue_ms", "50"),
            ("prefill_ms", "100"),
            ("prefill_per_token_ms", "2"),
            ("tokens_per_second", "100"),
            ("output_tokens", "4"),
        ]);
        let plan = plan(&p, req(), &mut Rng::new(1));
        assert!((ms(plan.prefill_end) - 170.0).abs() < 1e-6);
        let at: Vec<f64> = plan.steps.iter().map(|s| ms(s.at)).collect();
        for (got, want) in at.iter().zip([170.0, 180.0, 190.0, 200.0]) {
            assert!((got - want).abs() < 1e-6, "{at:?}");
        }
        let text: String = plan.steps.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(text, "Streaming feels fast when");
        assert_eq!(plan.finish_reason, "stop");
    }

    #[test]
    fn ttft_replaces_prefill_and_chunks_coalesce_at_their_last_token() {
        let p = profile(&[
            ("ttft_ms", "300"),
            ("tokens_per_second", "10"),
            ("output_tokens", "5"),
            ("tokens_per_chunk", "2"),
        ]);
        let plan = plan(&p, req(), &mut Rng::new(1));
        let shape: Vec<(usize, f64)> = plan.steps.iter().map(|s| (s.tokens, ms(s.at))).collect();
        let want = [(2, 400.0), (2, 600.0), (1, 700.0)];
        for ((n, at), (wn, wat)) in shape.iter().zip(want) {
            assert_eq!(*n, wn);
            assert!((at - wat).abs() < 1e-6, "{shape:?}");
        }
    }

    #[test]
    fn reasoning_precedes_the_answer_and_hidden_reasoning_only_takes_time() {
        let streamed = profile(&[
            ("ttft_ms", "0"),
            ("tokens_per_second", "10"),
            ("reasoning_tokens", "3"),
            ("output_tokens", "2"),
            ("tokens_per_chunk", "8"),
        ]);
        let plan_s = plan(&streamed, req(), &mut Rng::new(1));
        assert_eq!(plan_s.steps.len(), 2);
        assert_eq!(plan_s.steps[0].channel, Channel::Reasoning);
        assert_eq!(plan_s.steps[1].channel, Channel::Visible);
        let mut hidden = streamed.clone();
        hidden.reasoning = Reasoning::Hidden;
        let plan_h = plan(&hidden, req(), &mut Rng::new(1));
        assert_eq!(plan_h.steps.len(), 1);
        assert!(plan_h.reasoning_hidden);
        // The answer still waits for the 3 hidden tokens: 0.3 s, then 0.1 s more.
        assert!((ms(plan_h.steps[0].at) - 400.0).abs() < 1e-6);
        // A dialect without a reasoning channel hides it whatever the profile says.
        let no_channel = Request {
            reasoning_channel: false,
            ..req()
        };
        assert!(plan(&streamed, no_channel, &mut Rng::new(1)).reasoning_hidden);
    }

    #[test]
    fn stalls_shift_later_tokens_and_max_tokens_cuts_with_length() {
        let p = profile(&[
            ("ttft_ms", "0"),
            ("tokens_per_second", "100"),
            ("output_tokens", "5"),
            ("stall_at", "2"),
            ("stall_ms", "500"),
        ]);
        let capped = Request {
            max_tokens: Some(4),
            ..req()
        };
        let plan = plan(&p, capped, &mut Rng::new(1));
        let at: Vec<f64> = plan.steps.iter().map(|s| ms(s.at)).collect();
        for (got, want) in at.iter().zip([0.0, 10.0, 520.0, 530.0]) {
            assert!((got - want).abs() < 1e-6, "{at:?}");
        }
        assert_eq!(plan.visible_tokens, 4);
        assert_eq!(plan.finish_reason, "length");
    }

    #[test]
    fn lengths_from_a_distribution_follow_the_seed() {
        let p = profile(&[("output_tokens", "10..20")]);
        let n = |seed| plan(&p, req(), &mut Rng::new(seed)).visible_tokens;
        assert_eq!(n(42), n(42));
        let seen: std::collections::BTreeSet<usize> = (0..200).map(n).collect();
        assert!(seen.iter().all(|n| (10..=20).contains(n)));
        assert!(seen.len() > 5, "{seen:?}");
    }

    #[test]
    fn failures_cut_after_the_requested_tokens() {
        let p = profile(&[
            ("ttft_ms", "0"),
            ("tokens_per_second", "100"),
            ("output_tokens", "10"),
            ("fail", "drop"),
            ("fail_after", "3"),
        ]);
        let plan = plan(&p, req(), &mut Rng::new(1));
        assert_eq!(plan.steps.len(), 3);
        let (sent, at) = plan.cut.unwrap();
        assert_eq!(sent, 3);
        assert!((ms(at) - 30.0).abs() < 1e-6);
        let default_half = profile(&[("output_tokens", "10"), ("fail", "error")]);
        assert_eq!(
            super::plan(&default_half, req(), &mut Rng::new(1))
                .steps
                .len(),
            5
        );
    }
}
