//! An open-loop load generator for `POST /collect` (`cargo xtask bench collect`, issue
//! #31): requests leave on a fixed schedule whatever the answers do, and each latency is
//! measured from the request's *scheduled* time, so a server that stalls is charged for
//! every request that waited behind the stall (no coordinated omission).
//!
//! HTTP/1.1 with keep-alive through hyper's pooled client: a connection is reused when
//! idle, another is opened when every one is busy (a beacon's browser does the same).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::time::Instant;
use ttfx_core::stats::percentile;

/// The pooled keep-alive client the generator posts with.
pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    let mut connector = HttpConnector::new();
    // Beacons are small: Nagle's delay would be measured as the server's.
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(usize::MAX)
        .build(connector)
}

/// The `i`-th request's send time, `i / rate` seconds after the start.
pub fn scheduled(i: u64, rate_per_s: f64) -> Duration {
    Duration::from_secs_f64(i as f64 / rate_per_s)
}

/// What one answered (or failed) request left.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    /// From its scheduled time to the whole answer, ms.
    latency_ms: f64,
    /// The status, or 0 when the request failed before one arrived.
    status: u16,
    /// It was scheduled inside the measured window (not the warm-up).
    measured: bool,
}

/// The figures of one window at one rate.
#[derive(Debug, Clone)]
pub struct Window {
    pub rate_per_s: f64,
    pub seconds: f64,
    /// Requests scheduled in the measured window.
    pub sent: usize,
    /// Of them, answered 204.
    pub stored: usize,
    /// Any other answer or a failed request.
    pub failed: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// The generator's own lateness: the latest any request left after its scheduled
    /// time (a late generator measures less load than it claims).
    pub send_lag_ms: f64,
    /// The server's CPU time over the window (utime + stime), ms; None without a pid.
    pub server_cpu_ms: Option<f64>,
}

impl Window {
    /// Held: every request stored and p99 within `p99_limit_ms`. (The generator's own
    /// lateness is in every latency already: each is timed from its schedule.)
    pub fn held(&self, p99_limit_ms: f64) -> bool {
        self.failed == 0 && self.sent > 0 && self.p99_ms <= p99_limit_ms
    }

    /// The server's CPU time per stored beacon, µs.
    pub fn cpu_us_per_beacon(&self) -> Option<f64> {
        self.server_cpu_ms
            .filter(|_| self.stored > 0)
            .map(|ms| ms * 1000.0 / self.stored as f64)
    }
}

/// Percentiles (numpy's linear rule, ttfx's own) of `outcomes`' measured latencies, and
/// their counts, as a [`Window`].
fn window_of(outcomes: &[Outcome], rate_per_s: f64, seconds: f64, send_lag_ms: f64) -> Window {
    let measured: Vec<&Outcome> = outcomes.iter().filter(|o| o.measured).collect();
    let mut latencies: Vec<f64> = measured.iter().map(|o| o.latency_ms).collect();
    latencies.sort_by(f64::total_cmp);
    let stored = measured.iter().filter(|o| o.status == 204).count();
    Window {
        rate_per_s,
        seconds,
        sent: measured.len(),
        stored,
        failed: measured.len() - stored,
        p50_ms: percentile(&latencies, 50.0).unwrap_or(f64::NAN),
        p99_ms: percentile(&latencies, 99.0).unwrap_or(f64::NAN),
        max_ms: latencies.last().copied().unwrap_or(f64::NAN),
        send_lag_ms,
        server_cpu_ms: None,
    }
}

/// Posts `body(i)` to `url` at `rate_per_s` for `warmup + window`, open loop; the
/// figures of the requests scheduled in the window (after the warm-up). Requests still
/// unanswered 30 s after the last was scheduled count as failed.
pub async fn run(
    client: &HttpClient,
    url: &str,
    rate_per_s: f64,
    warmup: Duration,
    window: Duration,
    body: impl Fn(u64) -> Bytes,
) -> anyhow::Result<Window> {
    let uri: axum::http::Uri = url.parse()?;
    let total = ((warmup + window).as_secs_f64() * rate_per_s).round() as u64;
    let first_measured = (warmup.as_secs_f64() * rate_per_s).round() as u64;
    let outcomes: Arc<Mutex<Vec<Outcome>>> = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = tokio::task::JoinSet::new();
    let start = Instant::now() + Duration::from_millis(20);
    let mut send_lag = Duration::ZERO;
    let mut i = 0;
    while i < total {
        tokio::time::sleep_until(start + scheduled(i, rate_per_s)).await;
        // Everything due by now leaves now: the timer wakes at most once a millisecond.
        let now = Instant::now();
        while i < total && start + scheduled(i, rate_per_s) <= now {
            let due = start + scheduled(i, rate_per_s);
            send_lag = send_lag.max(now - due);
            let request = axum::http::Request::post(uri.clone())
                .header("content-type", "text/plain")
                .body(Full::new(body(i)))?;
            let client = client.clone();
            let outcomes = outcomes.clone();
            let measured = i >= first_measured;
            tasks.spawn(async move {
                let status = match client.request(request).await {
                    Ok(res) => {
                        let status = res.status().as_u16();
                        // The whole answer: a 204 has no body, an error's JSON is short.
                        match res.into_body().collect().await {
                            Ok(_) => status,
                            Err(_) => 0,
                        }
                    }
                    Err(_) => 0,
                };
                let latency_ms = due.elapsed().as_secs_f64() * 1000.0;
                if let Ok(mut o) = outcomes.lock() {
                    o.push(Outcome {
                        latency_ms,
                        status,
                        measured,
                    });
                }
            });
            i += 1;
        }
        // Reap finished tasks so the set stays small at high rates.
        while tasks.try_join_next().is_some() {}
    }
    let drained = tokio::time::timeout(Duration::from_secs(30), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tasks.abort_all();
    }
    let outcomes = outcomes.lock().map(|o| o.clone()).unwrap_or_default();
    let mut w = window_of(
        &outcomes,
        rate_per_s,
        window.as_secs_f64(),
        send_lag.as_secs_f64() * 1000.0,
    );
    // Requests that never finished are failures, not missing samples.
    let finished = outcomes.iter().filter(|o| o.measured).count();
    let scheduled_in_window = (total - first_measured) as usize;
    w.failed += scheduled_in_window.saturating_sub(finished);
    w.sent = scheduled_in_window;
    Ok(w)
}

/// A process's CPU time so far (utime + stime of /proc/PID/stat), ms.
pub fn cpu_ms(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces): utime 14, stime 15.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on every Linux ttfx runs on.
    Some(ticks as f64 * 10.0)
}

/// The 1-minute load average (/proc/loadavg), to print beside the figures: others'
/// work on the machine shows in them.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_fixed_by_the_rate_alone() {
        assert_eq!(scheduled(0, 2000.0), Duration::ZERO);
        assert_eq!(scheduled(2000, 2000.0), Duration::from_secs(1));
        assert_eq!(scheduled(3, 1000.0), Duration::from_millis(3));
    }

    #[test]
    fn a_window_counts_only_its_measured_requests_and_every_failure() {
        let mut outcomes: Vec<Outcome> = (1..=100)
            .map(|ms| Outcome {
                latency_ms: f64::from(ms),
                status: 204,
                measured: true,
            })
            .collect();
        // A warm-up request, slow, left out.
        outcomes.push(Outcome {
            latency_ms: 9_999.0,
            status: 204,
            measured: false,
        });
        let w = window_of(&outcomes, 100.0, 1.0, 0.5);
        assert_eq!((w.sent, w.stored, w.failed), (100, 100, 0));
        // numpy.percentile(range(1, 101), [50, 99]) = 50.5, 99.01
        assert!((w.p50_ms - 50.5).abs() < 1e-9, "{}", w.p50_ms);
        assert!((w.p99_ms - 99.01).abs() < 1e-9, "{}", w.p99_ms);
        assert!(!w.held(20.0) && w.held(100.0));
        outcomes[0].status = 429;
        let w = window_of(&outcomes, 100.0, 1.0, 0.5);
        assert_eq!(w.failed, 1);
        assert!(!w.held(100.0), "a refused beacon fails the window");
    }
}
