//! The metric object AIPerf and GenAI-Perf both write (AIPerf began as GenAI-Perf's
//! successor): `{"unit": "ms", "avg": …, "p50": …, "p90": …, "p95": …, "p99": …, …}`,
//! any statistic possibly `null` (AIPerf writes non-finite values so).

use serde::Deserialize;

use crate::number::lenient;
use crate::{Figures, Percentiles};

#[derive(Debug, Default, Deserialize)]
pub struct StatObject {
    #[serde(default)]
    pub unit: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub avg: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub p50: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub p90: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub p95: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub p99: Option<f64>,
    /// AIPerf 0.1's records carry their count.
    #[serde(default, deserialize_with = "crate::number::lenient_count")]
    pub count: Option<u64>,
}

impl StatObject {
    /// Its figures in ms (a `unit` of s, us or ns is converted); `None` for a unit that
    /// is not a time.
    pub fn figures(&self) -> Option<Figures> {
        let scale = match self.unit.as_deref() {
            None | Some("ms") => 1.0,
            Some("s" | "sec") => 1000.0,
            Some("us") => 1e-3,
            Some("ns") => 1e-6,
            Some(_) => return None,
        };
        let s = |v: Option<f64>| v.map(|v| v * scale);
        let p = Percentiles {
            mean: s(self.avg),
            p50: s(self.p50),
            p90: s(self.p90),
            p95: s(self.p95),
            p99: s(self.p99),
        };
        Figures::from_summary(p, self.count)
    }

    /// A counter's value (`request_count.avg`).
    pub fn count_value(&self) -> Option<u64> {
        self.avg
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| v.round() as u64)
    }
}
