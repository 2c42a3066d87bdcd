//! What an imported benchmark says, in one shape whatever tool wrote it: who measured,
//! under what load, how many requests, and four latency metrics in ms.

use serde::{Deserialize, Serialize};
use ttfx_core::percentile::percentile;

/// The tool that wrote a benchmark file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    /// `benchmarks/benchmark_serving.py`, `vllm bench serve`, `vllm bench sweep`.
    Vllm,
    /// `python -m sglang.bench_serving`.
    Sglang,
    /// NVIDIA AIPerf.
    Aiperf,
    /// NVIDIA GenAI-Perf (and the perf_analyzer export it writes beside).
    GenaiPerf,
    Guidellm,
    Llmperf,
    /// `ttfx run --json`, a batch report.
    Ttfx,
}

impl Tool {
    pub const ALL: [Tool; 7] = [
        Tool::Vllm,
        Tool::Sglang,
        Tool::Aiperf,
        Tool::GenaiPerf,
        Tool::Guidellm,
        Tool::Llmperf,
        Tool::Ttfx,
    ];

    /// The name `--format` takes and reports print.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Vllm => "vllm",
            Tool::Sglang => "sglang",
            Tool::Aiperf => "aiperf",
            Tool::GenaiPerf => "genai-perf",
            Tool::Guidellm => "guidellm",
            Tool::Llmperf => "llmperf",
            Tool::Ttfx => "ttfx",
        }
    }

    pub fn parse(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// The load the benchmark put on the server.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Load {
    /// Requests in flight at once.
    Concurrency(f64),
    /// Requests sent per second; infinite means all at once.
    RequestRate(#[serde(with = "rate_text")] f64),
    /// One request after another.
    Sequential,
    Unknown,
}

impl Load {
    pub fn describe(&self) -> String {
        match self {
            Load::Concurrency(c) => format!("concurrency {}", trim(*c)),
            Load::RequestRate(r) if r.is_infinite() => "request rate inf (all at once)".into(),
            Load::RequestRate(r) => format!("request rate {}/s", trim(*r)),
            Load::Sequential => "sequential (concurrency 1)".into(),
            Load::Unknown => "unknown".into(),
        }
    }
}

fn trim(v: f64) -> String {
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// JSON has no infinity: an infinite rate is written `"inf"`.
mod rate_text {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_infinite() {
            s.serialize_str("inf")
        } else {
            s.serialize_f64(*v)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        crate::number::lenient(d).map(|v| v.unwrap_or(f64::NAN))
    }
}

/// The four latency metrics every tool reports in some form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Time to first token.
    Ttft,
    /// Inter-token latency: each gap between consecutive chunks, pooled over requests.
    Itl,
    /// Time per output token: one figure per request, (e2e − ttft) / (tokens − 1).
    Tpot,
    /// End-to-end request latency.
    E2e,
}

impl Metric {
    pub const ALL: [Metric; 4] = [Metric::Ttft, Metric::Itl, Metric::Tpot, Metric::E2e];

    /// The name the collector stores and reports print.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft_ms",
            Metric::Itl => "itl_ms",
            Metric::Tpot => "tpot_ms",
            Metric::E2e => "e2e_ms",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Metric::Ttft => "TTFT",
            Metric::Itl => "ITL",
            Metric::Tpot => "TPOT",
            Metric::E2e => "E2E latency",
        }
    }

    pub fn parse(name: &str) -> Option<Metric> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == name || m.name().trim_end_matches("_ms") == name)
    }
}

/// Where a metric's percentiles come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Computed here from the file's per-request values (numpy's linear rule).
    PerRequest,
    /// The file's own summary figures, as it reports them.
    Summary,
}

/// The percentiles a report shows, in ms. A summary may lack some of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

impl Percentiles {
    pub fn is_empty(&self) -> bool {
        [self.mean, self.p50, self.p90, self.p95, self.p99]
            .iter()
            .all(Option::is_none)
    }

    /// p50, p90, p95 or p99 by number.
    pub fn at(&self, p: u8) -> Option<f64> {
        match p {
            50 => self.p50,
            90 => self.p90,
            95 => self.p95,
            99 => self.p99,
            _ => None,
        }
    }
}

/// One metric of one benchmark run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub origin: Origin,
    /// Values the percentiles were computed from (per-request origin), or the count the
    /// file states.
    pub count: Option<u64>,
    pub percentiles: Percentiles,
    /// The per-request values in ms (finite, failed requests left out); empty for a
    /// summary. Never serialized into reports: a file can hold millions.
    #[serde(skip)]
    pub values: Vec<f64>,
}

impl Figures {
    /// From per-request values in ms; `None` when no value is finite.
    pub fn from_values(mut values: Vec<f64>) -> Option<Figures> {
        values.retain(|v| v.is_finite());
        if values.is_empty() {
            return None;
        }
        values.sort_unstable_by(f64::total_cmp);
        let p = |q| percentile_sorted(&values, q);
        let percentiles = Percentiles {
            mean: Some(values.iter().sum::<f64>() / values.len() as f64),
            p50: p(50.0),
            p90: p(90.0),
            p95: p(95.0),
            p99: p(99.0),
        };
        Some(Figures {
            origin: Origin::PerRequest,
            count: Some(values.len() as u64),
            percentiles,
            values,
        })
    }

    /// The file's own figures; `None` when it states none.
    pub fn from_summary(percentiles: Percentiles, count: Option<u64>) -> Option<Figures> {
        let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
        let percentiles = Percentiles {
            mean: finite(percentiles.mean),
            p50: finite(percentiles.p50),
            p90: finite(percentiles.p90),
            p95: finite(percentiles.p95),
            p99: finite(percentiles.p99),
        };
        (!percentiles.is_empty()).then_some(Figures {
            origin: Origin::Summary,
            count,
            percentiles,
            values: Vec::new(),
        })
    }

    /// The `p`-th percentile: computed from the values when there are any, else the
    /// summary's own figure for exactly that percentile.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        if self.values.is_empty() {
            let whole = p.fract() == 0.0 && (0.0..=100.0).contains(&p);
            return whole.then(|| self.percentiles.at(p as u8)).flatten();
        }
        percentile_sorted(&self.values, p)
    }
}

/// numpy's linear rule on values already sorted (sorting again would double the cost of
/// a file's millions of gaps); the same rule as [`percentile`].
fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.len() < 2 {
        return percentile(sorted, p);
    }
    if !(0.0..=100.0).contains(&p) {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// One benchmark run: a file holds one or several (JSON Lines, sweeps, GuideLLM's list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRun {
    pub tool: Tool,
    /// The tool's version, where the file states it.
    pub tool_version: Option<String>,
    pub model: Option<String>,
    pub load: Load,
    pub completed: u64,
    pub failed: u64,
    pub ttft: Option<Figures>,
    pub itl: Option<Figures>,
    pub tpot: Option<Figures>,
    pub e2e: Option<Figures>,
    /// What the reader had to decide (a renamed key, rows left out), for the reader.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl BenchRun {
    pub fn new(tool: Tool) -> BenchRun {
        BenchRun {
            tool,
            tool_version: None,
            model: None,
            load: Load::Unknown,
            completed: 0,
            failed: 0,
            ttft: None,
            itl: None,
            tpot: None,
            e2e: None,
            notes: Vec::new(),
        }
    }

    pub fn metric(&self, m: Metric) -> Option<&Figures> {
        match m {
            Metric::Ttft => self.ttft.as_ref(),
            Metric::Itl => self.itl.as_ref(),
            Metric::Tpot => self.tpot.as_ref(),
            Metric::E2e => self.e2e.as_ref(),
        }
    }

    pub fn set(&mut self, m: Metric, figures: Option<Figures>) {
        let slot = match m {
            Metric::Ttft => &mut self.ttft,
            Metric::Itl => &mut self.itl,
            Metric::Tpot => &mut self.tpot,
            Metric::E2e => &mut self.e2e,
        };
        *slot = figures;
    }

    /// Per-request values win over the file's summary for the same metric.
    pub fn prefer(&mut self, m: Metric, figures: Option<Figures>) {
        let better = match (self.metric(m), &figures) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(old), Some(new)) => {
                old.origin == Origin::Summary && new.origin == Origin::PerRequest
            }
        };
        if better {
            self.set(m, figures);
        }
    }
}

/// One file, read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    /// The name it was read under (a path's last component), for people; never used to
    /// recognise the tool.
    pub file_name: String,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
    pub bytes: u64,
    pub tool: Tool,
    pub runs: Vec<BenchRun>,
}
