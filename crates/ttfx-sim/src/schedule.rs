//! The reply's timetable, fixed before the first byte: every chunk's deadline as an
//! offset from the request's arrival. The streamer sleeps until each absolute deadline
//! (arrival + offset), so a late timer wake-up delays one chunk and is not carried into
//! the next.

use std::time::Duration;

use super::limits::MAX_TOKENS;
use super::profile::{Failure, Length, Profile, Reasoning};
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

#[derive(Debug, Clone)]
pub struct Plan {
    /// End of prefill: the first token (on any channel, hidden or not) is generated here.
    pub prefill_end: Duration,
    /// Reasoning tokens generated (streamed or hidden).
    pub reasoning_tokens: usize,
    pub visible_tokens: usize,
    /// `length` when `max_tokens` cut the reply, else `stop`.
    pub finish_reason: &'static str,
    /// The chunks, made one at a time: a 100,000-token reply costs no memory up front.
    pub steps: Steps,
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
    let streamed = visible_tokens
        + if reasoning_hidden {
            0
        } else {
            reasoning_tokens
        };
    let fail_after = match p.failure {
        Some(Failure::InBand | Failure::Drop) => Some(p.fail_after.unwrap_or(streamed / 2)),
        _ => None,
    };
    Plan {
        prefill_end,
        reasoning_tokens,
        visible_tokens,
        finish_reason,
        steps: Steps {
            prev: prefill_end.as_secs_f64(),
            gap: 0.0,
            slowdown: 1.0,
            i: 0,
            total: reasoning_tokens + visible_tokens,
            reasoning_tokens,
            hidden: reasoning_hidden,
            interval: 1.0 / p.tokens_per_second,
            jitter: p.jitter,
            stall_at: {
                // Sorted for the per-token binary search (the parser sorts already).
                let mut at = p.stall_at.clone();
                at.sort_unstable();
                at.dedup();
                at
            },
            stall: p.stall.as_secs_f64(),
            per_chunk: p.tokens_per_chunk,
            rng: rng.clone(),
            emitted: 0,
            fail_after,
            cut: None,
            last_at: prefill_end,
        },
    }
}

/// The reply's chunks in order. Token i (reasoning first, then the answer) is due at
/// prefill end + the sum of the intervals before it (each × jitter × the slowdown under
/// load) + the stalls before it; a chunk is due with its last token.
#[derive(Debug, Clone)]
pub struct Steps {
    /// Seconds after arrival at which token `i − 1` was due (the prefill's end before
    /// token 0).
    prev: f64,
    /// The interval from token `i − 1` to token `i`, with its jitter, before the
    /// slowdown (0 before token 0). Kept apart from `prev` so the slowdown is applied
    /// when token `i` is asked for, not when token `i − 1` was: under load the interval
    /// follows the batch as it is when the token before it leaves.
    gap: f64,
    /// The factor on the intervals of the tokens asked for next (load.rs); 1 without
    /// load, and `gap × 1` is `gap` to the bit, so an unloaded schedule is unchanged.
    slowdown: f64,
    i: usize,
    total: usize,
    reasoning_tokens: usize,
    hidden: bool,
    interval: f64,
    jitter: f64,
    stall_at: Vec<usize>,
    stall: f64,
    per_chunk: usize,
    rng: Rng,
    emitted: usize,
    fail_after: Option<usize>,
    /// Once the steps end at an injected failure: when it happens.
    pub cut: Option<Duration>,
    /// The deadline of the last token generated so far (hidden ones included).
    pub last_at: Duration,
}

impl Steps {
    /// Multiplies the intervals before the tokens asked for from now on (each one's own
    /// jitter kept): the load model's `1 + load_tps_slope × others`, read as each chunk
    /// is asked for. Values below 1 or not finite are taken as 1.
    pub fn set_slowdown(&mut self, factor: f64) {
        self.slowdown = if factor.is_finite() && factor >= 1.0 {
            factor
        } else {
            1.0
        };
    }

    fn peek(&self) -> Duration {
        let stall = if self.stall_at.binary_search(&self.i).is_ok() {
            self.stall
        } else {
            0.0
        };
        Duration::from_secs_f64(self.prev + self.gap * self.slowdown + stall)
    }

    /// When the reply's last deadline falls, after the request's arrival: its last
    /// token's, or an injected failure's (at the latest one interval after the last
    /// token). It walks the timing of every token (hidden ones included) on a copy of
    /// the seeded generator, so it is the very schedule the reply follows; no text is
    /// made, and the walk is at most 2 × `MAX_TOKENS` steps.
    pub fn end(&self) -> Duration {
        let mut walk = self.clone();
        while walk.i < walk.total {
            walk.advance();
        }
        if walk.fail_after.is_some() {
            walk.peek()
        } else {
            walk.last_at
        }
    }

    /// Stalls that fall inside the reply (for messages about its length).
    pub fn stalls(&self) -> usize {
        self.stall_at.partition_point(|&i| i < self.total)
    }

    /// Token i's deadline; moves to token i + 1.
    fn advance(&mut self) -> Duration {
        let at = self.peek();
        let scale = 1.0 + self.jitter * (2.0 * self.rng.unit() - 1.0);
        self.prev = at.as_secs_f64();
        self.gap = self.interval * scale;
        self.i += 1;
        self.last_at = at;
        at
    }
}

impl Iterator for Steps {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        if self.cut.is_some() {
            return None;
        }
        let mut step: Option<Step> = None;
        while self.i < self.total {
            let channel = if self.i < self.reasoning_tokens {
                Channel::Reasoning
            } else {
                Channel::Visible
            };
            if channel == Channel::Reasoning && self.hidden {
                self.advance();
                continue;
            }
            if self.fail_after.is_some_and(|n| self.emitted >= n) {
                if step.is_none() {
                    self.cut = Some(self.peek());
                }
                return step;
            }
            if let Some(s) = &step
                && (s.channel != channel || s.tokens >= self.per_chunk)
            {
                return step;
            }
            let word = match channel {
                Channel::Reasoning => text::reasoning_word(self.i),
                Channel::Visible => text::word(self.i - self.reasoning_tokens),
            };
            let at = self.advance();
            self.emitted += 1;
            match &mut step {
                Some(s) => {
                    s.text.push_str(&word);
                    s.tokens += 1;
                    s.at = at;
                }
                None => {
                    step = Some(Step {
                        at,
                        channel,
                        text: word,
                        tokens: 1,
                    })
                }
            }
        }
        // Out of tokens: a failure asked for after the end happens one interval later.
        if step.is_none() && self.fail_after.is_some() {
            self.cut = Some(self.peek());
        }
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::builtin;

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
        let steps: Vec<Step> = plan.steps.collect();
        let at: Vec<f64> = steps.iter().map(|s| ms(s.at)).collect();
        for (got, want) in at.iter().zip([170.0, 180.0, 190.0, 200.0]) {
            assert!((got - want).abs() < 1e-6, "{at:?}");
        }
        let text: String = steps.iter().map(|s| s.text.as_str()).collect();
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
        let shape: Vec<(usize, f64)> = plan.steps.map(|s| (s.tokens, ms(s.at))).collect();
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
        let steps_s: Vec<Step> = plan(&streamed, req(), &mut Rng::new(1)).steps.collect();
        assert_eq!(steps_s.len(), 2);
        assert_eq!(steps_s[0].channel, Channel::Reasoning);
        assert_eq!(steps_s[1].channel, Channel::Visible);
        let mut hidden = streamed.clone();
        hidden.reasoning = Reasoning::Hidden;
        let steps_h: Vec<Step> = plan(&hidden, req(), &mut Rng::new(1)).steps.collect();
        assert_eq!(steps_h.len(), 1);
        // The answer still waits for the 3 hidden tokens: 0.3 s, then 0.1 s more.
        assert!((ms(steps_h[0].at) - 400.0).abs() < 1e-6);
        // A dialect without a reasoning channel hides it whatever the profile says.
        let no_channel = Request {
            reasoning_channel: false,
            ..req()
        };
        let steps_n: Vec<Step> = plan(&streamed, no_channel, &mut Rng::new(1))
            .steps
            .collect();
        assert!(steps_n.iter().all(|s| s.channel == Channel::Visible));
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
        let at: Vec<f64> = plan.steps.map(|s| ms(s.at)).collect();
        for (got, want) in at.iter().zip([0.0, 10.0, 520.0, 530.0]) {
            assert!((got - want).abs() < 1e-6, "{at:?}");
        }
        assert_eq!(plan.visible_tokens, 4);
        assert_eq!(plan.finish_reason, "length");
    }

    #[test]
    fn a_slowdown_stretches_the_intervals_asked_for_after_it_and_nothing_else() {
        let p = profile(&[
            ("ttft_ms", "100"),
            ("tokens_per_second", "100"),
            ("output_tokens", "5"),
            ("stall_at", "3"),
            ("stall_ms", "50"),
            ("jitter", "0.5"),
        ]);
        let unloaded: Vec<f64> = plan(&p, req(), &mut Rng::new(7))
            .steps
            .map(|s| ms(s.at))
            .collect();
        let mut steps = plan(&p, req(), &mut Rng::new(7)).steps;
        let mut at = Vec::new();
        // Tokens 0 and 1 unloaded, then the batch fills: intervals × 3 from token 2 on.
        for factor in [1.0, 1.0, 3.0, 3.0, 3.0] {
            steps.set_slowdown(factor);
            at.push(ms(steps.next().unwrap().at));
        }
        assert!(steps.next().is_none());
        assert_eq!(at[..2], unloaded[..2], "unchanged before the slowdown");
        // Each later interval is its own jittered interval × 3; the stall is not
        // slowed.
        for i in 2..5 {
            let stall = if i == 3 { 50.0 } else { 0.0 };
            let want = (unloaded[i] - unloaded[i - 1] - stall) * 3.0 + stall;
            // Deadlines are whole nanoseconds: a few of them apart after × 3.
            assert!(
                (at[i] - at[i - 1] - want).abs() < 1e-5,
                "{at:?} {unloaded:?}"
            );
        }
        // A factor that is not a slowdown is none.
        let mut steps = plan(&p, req(), &mut Rng::new(7)).steps;
        let mut odd = Vec::new();
        for factor in [f64::NAN, 0.5, f64::INFINITY, -1.0, 1.0] {
            steps.set_slowdown(factor);
            odd.push(ms(steps.next().unwrap().at));
        }
        assert_eq!(odd, unloaded);
    }

    #[test]
    fn a_long_reply_is_made_lazily() {
        let p = profile(&[("output_tokens", "100000"), ("tokens_per_chunk", "7")]);
        let plan = plan(&p, req(), &mut Rng::new(1));
        // The plan holds no per-token storage; every chunk is made on demand.
        assert!(std::mem::size_of_val(&plan) < 512);
        let tokens: usize = plan.steps.map(|s| s.tokens).sum();
        assert_eq!(tokens, 100_000);
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
        let mut steps = plan.steps;
        assert_eq!(steps.by_ref().count(), 3);
        let at = steps.cut.unwrap();
        assert!((ms(at) - 30.0).abs() < 1e-6);
        let default_half = profile(&[("output_tokens", "10"), ("fail", "error")]);
        assert_eq!(
            super::plan(&default_half, req(), &mut Rng::new(1))
                .steps
                .count(),
            5
        );
    }
}
