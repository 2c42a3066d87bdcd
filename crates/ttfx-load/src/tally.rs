//! Samples in, the report's figures out. Each sample is folded in as it arrives and
//! dropped: per request a handful of numbers stays (one per metric, for exact numpy
//! percentiles), the pooled inter-chunk gaps go into a bounded digest.

use std::collections::BTreeMap;
use std::time::Instant;

use ttfx_core::series::GapDigest;
use ttfx_core::stats::{Budget, Goodput, Summary};

use crate::report::{
    ACHIEVED_SHARE_MIN, Errors, Generator, LATENESS_P99_LIMIT_MS, ModeReport, Requests, Throughput,
};
use crate::sample::{End, Gaps, ICL, SCALARS, Sample};

/// The window a load measures, on the run's clock.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The warm-up's end: the measured window starts here.
    pub start: Instant,
    /// Open loop: the last measured scheduled send.
    pub last_scheduled: Option<Instant>,
    /// When sending stopped (the duration's end, or the stop).
    pub end: Instant,
}

#[derive(Debug, Default)]
pub struct Tally {
    /// The window's planned end: a request ending after it was still open there.
    planned_end: Option<Instant>,
    requests: Requests,
    values: Vec<Vec<f64>>,
    gaps: GapDigest,
    lateness: Vec<f64>,
    errors: BTreeMap<String, u64>,
    good: u64,
    output_tokens: f64,
    last_sent: Option<Instant>,
    last_ended: Option<Instant>,
}

/// The figures of a tally, for the report.
#[derive(Debug)]
pub struct Figures {
    pub requests: Requests,
    pub metrics: BTreeMap<String, Summary>,
    pub throughput: Throughput,
    pub errors: Errors,
    pub generator: Generator,
    pub window_s: f64,
    pub elapsed_s: f64,
}

impl Tally {
    /// `planned_end`: when the measured window is due to end (`None`: at the stop).
    pub fn new(planned_end: Option<Instant>) -> Tally {
        Tally {
            planned_end,
            values: vec![Vec::new(); SCALARS.len()],
            ..Tally::default()
        }
    }

    pub fn add(&mut self, sample: Sample) {
        if !sample.measured {
            self.requests.warmup += 1;
            return;
        }
        self.requests.sent += 1;
        self.last_sent = self.last_sent.max(Some(sample.sent));
        if let Some(l) = sample.lateness_ms {
            self.lateness.push(l);
        }
        if sample.end == End::Cancelled {
            self.requests.cancelled += 1;
            return;
        }
        self.last_ended = self.last_ended.max(Some(sample.ended));
        if self.planned_end.is_some_and(|end| sample.ended > end) {
            self.requests.finished_after_window += 1;
        }
        match sample.end {
            End::Completed => {
                self.requests.completed += 1;
                self.output_tokens += sample.value("output_tokens").unwrap_or(0.0);
            }
            End::Failed(class) => {
                self.requests.failed += 1;
                *self.errors.entry(class.name()).or_default() += 1;
            }
            End::Cancelled => {}
        }
        self.good += u64::from(sample.good);
        for (list, value) in self.values.iter_mut().zip(sample.values) {
            list.extend(value);
        }
        match sample.gaps {
            Gaps::List(gaps) => gaps.into_iter().for_each(|g| self.gaps.insert(g)),
            Gaps::Digest(d) => self.gaps.merge(&d),
        }
    }

    /// The figures over `window`; `budgets` are goodput's SLOs; `open_loop` says whether
    /// the requests had a schedule.
    pub fn finish(self, window: Window, budgets: &[Budget], open_loop: bool) -> Figures {
        let since_start = |t: Instant| t.saturating_duration_since(window.start).as_secs_f64();
        let window_s = since_start(window.end);
        let elapsed_s = since_start(self.last_ended.map_or(window.end, |e| e.max(window.end)));
        let r = self.requests;
        let mut metrics = BTreeMap::new();
        for (name, values) in SCALARS.iter().zip(&self.values) {
            if let Some(s) = Summary::of(values) {
                metrics.insert((*name).to_owned(), s);
            }
        }
        if let Some(s) = self.gaps.summary() {
            metrics.insert(ICL.to_owned(), s);
        }
        let judged = r.sent - r.cancelled;
        let goodput = (!budgets.is_empty()).then(|| Goodput {
            budgets: budgets.to_vec(),
            good: self.good,
            total: judged,
            ratio: (judged > 0).then(|| self.good as f64 / judged as f64),
        });
        let throughput = Throughput {
            requests_per_s: per_s(r.completed as f64, elapsed_s),
            output_tokens_per_s: per_s(self.output_tokens, elapsed_s),
            output_tokens: self.output_tokens,
            goodput_per_s: goodput.as_ref().map(|g| per_s(g.good as f64, elapsed_s)),
            goodput,
        };
        let lateness_ms = Summary::of(&self.lateness);
        let generator = if open_loop {
            let scheduled_per_s = window
                .last_scheduled
                .map(|t| per_s(r.sent as f64, since_start(t)));
            let achieved_per_s = self
                .last_sent
                .map_or(0.0, |t| per_s(r.sent as f64, since_start(t)));
            let held = match (lateness_ms, scheduled_per_s) {
                (Some(l), Some(s)) if r.sent > 0 => {
                    Some(l.p99 <= LATENESS_P99_LIMIT_MS && achieved_per_s >= ACHIEVED_SHARE_MIN * s)
                }
                _ => None,
            };
            Generator {
                lateness_ms,
                scheduled_per_s,
                achieved_per_s,
                held,
            }
        } else {
            Generator {
                lateness_ms: None,
                scheduled_per_s: None,
                achieved_per_s: per_s(r.sent as f64, window_s),
                held: None,
            }
        };
        Figures {
            requests: r,
            metrics,
            throughput,
            errors: Errors {
                total: r.failed,
                by_class: self.errors,
            },
            generator,
            window_s,
            elapsed_s,
        }
    }
}

/// `n` per second of `seconds`; 0 over no time (one request, or none).
fn per_s(n: f64, seconds: f64) -> f64 {
    if seconds > 0.0 { n / seconds } else { 0.0 }
}

/// A mode as the report names it.
pub fn mode_report(mode: crate::Mode) -> ModeReport {
    match mode {
        crate::Mode::Rate(r) => ModeReport {
            kind: mode.kind().into(),
            rate_per_s: Some(r),
            concurrency: None,
        },
        crate::Mode::Concurrency(c) => ModeReport {
            kind: mode.kind().into(),
            rate_per_s: None,
            concurrency: Some(c),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::ErrorClass;
    use std::time::Duration;

    fn sample(at: Instant, ms: u64, end: End, ttft: Option<f64>, good: bool) -> Sample {
        let mut s = Sample::bare(true, Some(0.1), at, end);
        s.ended = at + Duration::from_millis(ms);
        s.values[0] = ttft;
        s.values[4] = (end == End::Completed).then_some(10.0);
        s.good = good;
        s.gaps = Gaps::List(vec![5.0, 7.0]);
        s
    }

    #[test]
    fn figures_follow_from_a_hand_count() {
        let t0 = Instant::now();
        let mut tally = Tally::new(Some(t0 + Duration::from_secs(2)));
        tally.add(Sample::bare(false, None, t0, End::Completed));
        tally.add(sample(t0, 100, End::Completed, Some(40.0), true));
        tally.add(sample(
            t0 + Duration::from_millis(500),
            200,
            End::Completed,
            Some(60.0),
            false,
        ));
        tally.add(sample(
            t0 + Duration::from_millis(900),
            3000,
            End::Failed(ErrorClass::HttpStatus(500)),
            None,
            false,
        ));
        tally.add(sample(
            t0,
            10,
            End::Failed(ErrorClass::Timeout),
            Some(80.0),
            false,
        ));
        tally.add(sample(t0, 10, End::Cancelled, None, false));
        let budgets = [crate::slo::parse("ttft_ms<=50").unwrap()];
        let window = Window {
            start: t0,
            last_scheduled: Some(t0 + Duration::from_millis(900)),
            end: t0 + Duration::from_secs(2),
        };
        let f = tally.finish(window, &budgets, true);
        assert_eq!(
            f.requests,
            Requests {
                sent: 5,
                completed: 2,
                failed: 2,
                cancelled: 1,
                finished_after_window: 1,
                warmup: 1,
            }
        );
        // The last request ended at 3.9 s: the rates are over 3.9 s, not the 2 s window.
        assert_eq!(f.window_s, 2.0);
        assert!((f.elapsed_s - 3.9).abs() < 1e-9);
        assert!((f.throughput.requests_per_s - 2.0 / 3.9).abs() < 1e-9);
        assert!((f.throughput.output_tokens_per_s - 20.0 / 3.9).abs() < 1e-9);
        let g = f.throughput.goodput.unwrap();
        assert_eq!((g.good, g.total), (1, 4));
        assert!((f.throughput.goodput_per_s.unwrap() - 1.0 / 3.9).abs() < 1e-9);
        // ttft of every request that has one, failed ones included (ttfx's batch rule).
        let ttft = f.metrics["ttft_ms"];
        assert_eq!((ttft.count, ttft.p50, ttft.max), (3, 60.0, 80.0));
        assert_eq!(f.metrics["icl_ms"].count, 8);
        assert_eq!(f.errors.total, 2);
        assert_eq!(f.errors.by_class["http_500"], 1);
        assert_eq!(f.errors.by_class["timeout"], 1);
        assert_eq!(f.generator.lateness_ms.unwrap().count, 5);
        // Five requests sent by 0.9 s, and scheduled by 0.9 s: on time.
        assert_eq!(f.generator.held, Some(true));
    }

    #[test]
    fn a_generator_that_sends_late_did_not_hold_its_rate() {
        let t0 = Instant::now();
        let mut tally = Tally::new(None);
        for i in 0..10u64 {
            let mut s = sample(
                t0 + Duration::from_millis(i * 10),
                1,
                End::Completed,
                None,
                false,
            );
            s.lateness_ms = Some(if i == 9 { 50.0 } else { 0.5 });
            tally.add(s);
        }
        let window = Window {
            start: t0,
            last_scheduled: Some(t0 + Duration::from_millis(40)),
            end: t0 + Duration::from_millis(100),
        };
        let f = tally.finish(window, &[], true);
        // p99 of nine 0.5s and one 50 is 45.55 ms; the sends also ran over 90 ms where
        // the schedule took 40.
        assert!(f.generator.lateness_ms.unwrap().p99 > LATENESS_P99_LIMIT_MS);
        assert_eq!(f.generator.held, Some(false));
        assert!(f.throughput.goodput.is_none() && f.throughput.goodput_per_s.is_none());
        let closed = Tally::new(None).finish(window, &[], false);
        assert_eq!(
            (closed.generator.held, closed.generator.lateness_ms),
            (None, None)
        );
    }
}
