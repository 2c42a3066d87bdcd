//! The collector's limits: the body's size and time, and a token bucket per client.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Largest `POST /collect` body: a whole run report of 2,048 kept chunks is at most
/// about 0.25 MB (docs/report.md), and a beacon (64 KiB in Chromium) is far below it.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Slowest `--collect-rate` besides 0: one request an hour. A slower rate is a typo (its
/// wait, `1 / rate` seconds, overflowed the wait's type and stopped the server: #30).
pub const MIN_RATE_PER_S: f64 = 1.0 / 3600.0;

/// Longest wait a 429 names: what a client waits with rate 0 (the burst only).
const LONGEST_WAIT: Duration = Duration::from_secs(3600);

/// Longest time a `POST /collect` body may take to arrive whole, from its headers: 20 s,
/// the 1 MiB limit at 0.4 Mbit/s; a beacon (≤ 64 KiB) needs well under a second. The
/// server's idle bound (`--body-timeout-ms`) restarts at every byte, so without this a
/// client sending a byte every few seconds held its connection for days (#30). Past it,
/// 408 and nothing stored.
pub const BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// Clients tracked at most before the idle ones are forgotten.
const PRUNE_AT: usize = 10_000;

/// A token bucket per client address: `burst` requests at once, then `rate` per second.
/// IPv6 clients are counted per /64, the block one subscriber usually holds.
#[derive(Debug)]
pub struct Buckets {
    rate: f64,
    burst: f64,
    clients: Mutex<HashMap<IpAddr, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The address a client is counted under.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

impl Buckets {
    pub fn new(rate: f64, burst: u32) -> Buckets {
        Buckets {
            rate,
            burst: f64::from(burst.max(1)),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token for `ip` at `now`; `Err` says when the next one will be there.
    pub fn take(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let mut clients = match self.clients.lock() {
            Ok(c) => c,
            // A panic while holding the lock left counts, not broken memory.
            Err(poisoned) => poisoned.into_inner(),
        };
        if clients.len() >= PRUNE_AT {
            let (rate, burst) = (self.rate, self.burst);
            clients.retain(|_, b| b.refilled(now, rate, burst) < burst);
        }
        let bucket = clients.entry(client_key(ip)).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        bucket.tokens = bucket.refilled(now, self.rate, self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            // At most an hour whatever the rate (checked at startup, bounded here too).
            let wait = Duration::try_from_secs_f64((1.0 - bucket.tokens) / self.rate)
                .unwrap_or(LONGEST_WAIT);
            Err(wait.min(LONGEST_WAIT))
        }
    }
}

impl Bucket {
    fn refilled(&self, now: Instant, rate: f64, burst: f64) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * rate).min(burst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_gets_its_burst_then_the_rate() {
        let buckets = Buckets::new(2.0, 3);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(buckets.take(a, t0), Ok(()));
        }
        let wait = buckets.take(a, t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        // Another client has its own bucket.
        assert_eq!(buckets.take(b, t0), Ok(()));
        // Half a second later one token is back, and only one.
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(buckets.take(a, t1), Ok(()));
        assert!(buckets.take(a, t1).is_err());
    }

    #[test]
    fn ipv6_clients_count_per_64_and_mapped_v4_as_v4() {
        let buckets = Buckets::new(0.0, 1);
        let t = Instant::now();
        assert!(buckets.take("2001:db8::1".parse().unwrap(), t).is_ok());
        assert!(buckets.take("2001:db8::2".parse().unwrap(), t).is_err());
        assert!(buckets.take("2001:db8:0:1::1".parse().unwrap(), t).is_ok());
        assert!(buckets.take("192.0.2.9".parse().unwrap(), t).is_ok());
        assert!(
            buckets
                .take("::ffff:192.0.2.9".parse().unwrap(), t)
                .is_err()
        );
    }
}
