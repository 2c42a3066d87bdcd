//! The result document of vLLM's serving benchmark and of SGLang's, which began as a
//! copy of it: flat, with summary keys `{mean,median,std,pNN}_{metric}_ms` and, when
//! detailed results are saved, per-request lists (`ttfts` and `itls` in seconds,
//! `errors` with an empty string for each success).
//!
//! Read by one map visitor: scalars are kept by name (so renamed and misspelled keys of
//! older versions are looked up by their aliases afterwards), the per-request lists are
//! read straight into flat vectors, everything else is skipped unread into memory.

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::number::{self, Number};
use crate::{BenchRun, Figures, Load, Metric, Percentiles};

/// One result document.
#[derive(Debug, Default)]
pub struct ServingDoc {
    /// Top-level numbers by key (NaN for a `NaN` token, null left out).
    pub numbers: Vec<(String, f64)>,
    /// Top-level strings by key.
    pub texts: Vec<(String, String)>,
    /// Keys whose value was null.
    pub nulls: Vec<String>,
    /// Per request, seconds; 0 for a failed request.
    pub ttfts: Option<Vec<f64>>,
    /// Every request's gaps, one after another, seconds.
    pub itls: Option<Vec<f64>>,
    /// How many of `itls` each request has.
    pub itl_lens: Option<Vec<u32>>,
    /// Per request: did it fail (a non-empty error)?
    pub failed: Option<Vec<bool>>,
    /// Per request end-to-end latency, seconds (newer versions' `e2els`, when saved).
    pub e2els: Option<Vec<f64>>,
    pub output_lens: Option<Vec<f64>>,
    /// SGLang's `server_info` (the model it served).
    pub server_info: Option<ServerInfo>,
}

/// SGLang's `server_info` (the server's own `/server_info`): its model and version.
#[derive(Debug, Default, Deserialize)]
pub struct ServerInfo {
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub served_model_name: Option<String>,
    #[serde(default)]
    pub model_path: Option<String>,
}

/// Longest string kept (a model id or a date); longer ones are skipped.
const KEPT_TEXT: usize = 1024;

impl ServingDoc {
    pub fn number(&self, keys: &[&str]) -> Option<f64> {
        keys.iter()
            .find_map(|k| self.numbers.iter().find(|(n, _)| n == k).map(|(_, v)| *v))
    }

    pub fn text(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|k| {
            self.texts
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        })
    }

    /// The file's own summary of one metric, whose key stem is one of `stems`
    /// (`ttft`, `e2el`, …).
    pub fn summary(&self, stems: &[&str]) -> Option<Figures> {
        // SGLang 0.2 wrote its keys without `_ms` (the values still in ms).
        let stat = |stat: &str| {
            let keys: Vec<String> = stems
                .iter()
                .flat_map(|s| [format!("{stat}_{s}_ms"), format!("{stat}_{s}")])
                .collect();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            self.number(&keys)
        };
        let percentiles = Percentiles {
            mean: stat("mean"),
            p50: stat("median").or_else(|| stat("p50")),
            p90: stat("p90"),
            p95: stat("p95"),
            p99: stat("p99"),
        };
        Figures::from_summary(percentiles, None)
    }

    /// `max_concurrency` caps requests in flight; `request_rate` paces them (`"inf"`: all
    /// at once). With both, the cap is the load when the rate is infinite.
    pub fn load(&self) -> Load {
        let concurrency = self
            .number(&["max_concurrency"])
            .filter(|c| c.is_finite() && *c > 0.0);
        let rate = self
            .number(&["request_rate"])
            .filter(|r| !r.is_nan() && *r > 0.0);
        match (concurrency, rate) {
            (Some(c), None) => Load::Concurrency(c),
            (Some(c), Some(r)) if r.is_infinite() => Load::Concurrency(c),
            (_, Some(r)) => Load::RequestRate(r),
            (None, None) => Load::Unknown,
        }
    }

    /// Completed and failed requests: the file's counts, else counted from its lists.
    pub fn counts(&self) -> (u64, u64) {
        let flagged = self
            .failed
            .as_ref()
            .map(|f| f.iter().filter(|x| **x).count() as u64);
        let completed = self
            .number(&["completed"])
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| v as u64)
            .or_else(|| Some(self.failed.as_ref()?.len() as u64 - flagged?))
            .unwrap_or(0);
        let failed = self
            .number(&["failed"])
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| v as u64)
            .or(flagged)
            .or_else(|| {
                let prompts = self.number(&["num_prompts"])?;
                (prompts.is_finite() && prompts >= completed as f64)
                    .then(|| prompts as u64 - completed)
            })
            .unwrap_or(0);
        (completed, failed)
    }

    /// Did request `i` fail? Its error text is not empty, or (when the file keeps no
    /// errors: vLLM 0.30+ without `--save-detailed`) its output length is 0. Never
    /// "its TTFT is 0": a request that fails mid-stream has a TTFT and gaps.
    fn failed_at(&self, i: usize) -> bool {
        let error = self.failed.as_ref().and_then(|f| f.get(i).copied());
        let empty = self
            .output_lens
            .as_ref()
            .and_then(|l| l.get(i))
            .map(|n| *n == 0.0);
        error.unwrap_or(false) || empty.unwrap_or(false)
    }

    /// TTFT, ITL, TPOT and E2E from the per-request lists (seconds → ms), failed
    /// requests left out (a 0 that remains is a request that failed unmarked: no real
    /// latency is 0). TPOT per request is (latency − TTFT) / (output tokens − 1), as
    /// the tools compute it, when the latencies are kept.
    pub fn per_request(&mut self, run: &mut BenchRun) {
        let ttfts = self.ttfts.take().unwrap_or_default();
        let ok = |doc: &Self, i: usize, v: f64| !doc.failed_at(i) && v > 0.0;
        let ttft: Vec<f64> = (0..ttfts.len())
            .filter(|&i| ok(self, i, ttfts[i]))
            .map(|i| ttfts[i] * 1000.0)
            .collect();
        run.prefer(Metric::Ttft, Figures::from_values(ttft));
        if let Some(mut itls) = self.itls.take() {
            // Without request boundaries (a flat list) the gaps cannot be told apart.
            if let Some(lens) = self.itl_lens.take().filter(|l| !l.is_empty()) {
                let mut kept = 0;
                let mut at = 0;
                for (i, n) in lens.iter().map(|n| *n as usize).enumerate() {
                    if !self.failed_at(i) {
                        itls.copy_within(at..at + n, kept);
                        kept += n;
                    }
                    at += n;
                }
                itls.truncate(kept);
            }
            run.prefer(Metric::Itl, Figures::from_values(super::ms(itls)));
        }
        let Some(latencies) = self.e2els.take() else {
            return;
        };
        let e2e: Vec<f64> = (0..latencies.len())
            .filter(|&i| ok(self, i, latencies[i]))
            .map(|i| latencies[i] * 1000.0)
            .collect();
        run.prefer(Metric::E2e, Figures::from_values(e2e));
        if let Some(lens) = &self.output_lens {
            let tpot: Vec<f64> = (0..latencies.len().min(ttfts.len()).min(lens.len()))
                .filter(|&i| ok(self, i, latencies[i]) && ttfts[i] > 0.0 && lens[i] > 1.0)
                .map(|i| (latencies[i] - ttfts[i]) * 1000.0 / (lens[i] - 1.0))
                .collect();
            run.prefer(Metric::Tpot, Figures::from_values(tpot));
        }
    }
}

/// Every result of the stream (one per document, or a list per document), each made a
/// run by `run` (vLLM's or SGLang's reading of the shared keys).
pub fn read<R: std::io::Read>(
    input: R,
    run: fn(ServingDoc) -> BenchRun,
) -> Result<Vec<BenchRun>, String> {
    let mut runs = Vec::new();
    for doc in super::documents::<Results, R>(input) {
        runs.extend(doc?.0.into_iter().map(run));
    }
    Ok(runs)
}

/// A document: one result, or a list of them (`vllm bench sweep`'s `summary.json`).
pub struct Results(pub Vec<ServingDoc>);

impl<'de> Deserialize<'de> for Results {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ResultsVisitor)
    }
}

struct ResultsVisitor;

impl<'de> Visitor<'de> for ResultsVisitor {
    type Value = Results;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a result object or a list of them")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Results, A::Error> {
        FlatVisitor.visit_map(map).map(|d| Results(vec![d]))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Results, A::Error> {
        let mut docs = Vec::new();
        while let Some(d) = seq.next_element::<ServingDoc>()? {
            docs.push(d);
        }
        Ok(Results(docs))
    }
}

impl<'de> Deserialize<'de> for ServingDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(FlatVisitor)
    }
}

/// The flat result object's visitor (LLMPerf's summary is read with it too).
pub struct FlatVisitor;

impl<'de> Visitor<'de> for FlatVisitor {
    type Value = ServingDoc;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a benchmark result object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ServingDoc, A::Error> {
        let mut doc = ServingDoc::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "ttfts" => doc.ttfts = Some(map.next_value::<Flat>()?.0),
                "itls" => {
                    let flat = map.next_value::<Flat>()?;
                    doc.itls = Some(flat.0);
                    doc.itl_lens = Some(flat.1);
                }
                // Per-request end-to-end seconds: `e2els`, or `latencies` in the
                // result files `vllm bench sweep` writes.
                "e2els" | "latencies" => doc.e2els = Some(map.next_value::<Flat>()?.0),
                "server_info" => doc.server_info = map.next_value::<Option<ServerInfo>>()?,
                "output_lens" => doc.output_lens = Some(map.next_value::<Flat>()?.0),
                "errors" => doc.failed = Some(map.next_value::<Errors>()?.0),
                _ => match map.next_value::<Scalar>()? {
                    Scalar::Number(v) => doc.numbers.push((key, v)),
                    Scalar::Text(t) => doc.texts.push((key, t)),
                    Scalar::Null => doc.nulls.push(key),
                    Scalar::Other => {}
                },
            }
        }
        Ok(doc)
    }
}

/// A list of numbers, or of lists of numbers, flattened (nulls and `NaN` kept as NaN).
/// The values, and for a list of lists each inner list's length.
struct Flat(Vec<f64>, Vec<u32>);

impl<'de> Deserialize<'de> for Flat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut out = Flat(Vec::new(), Vec::new());
        d.deserialize_any(FlattenVisitor(&mut out))?;
        Ok(out)
    }
}

struct FlattenVisitor<'a>(&'a mut Flat);

impl<'de> Visitor<'de> for FlattenVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of numbers or of lists of numbers")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(FlatSeed(&mut *self.0))?.is_some() {}
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// One element: a number is pushed, a list is flattened into the same vector.
struct FlatSeed<'a>(&'a mut Flat);

impl<'de> de::DeserializeSeed<'de> for FlatSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(ElementVisitor(self.0))
    }
}

struct ElementVisitor<'a>(&'a mut Flat);

impl<'de> Visitor<'de> for ElementVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number or a list of numbers")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let before = self.0.0.len();
        while let Some(v) = seq.next_element::<Number>()? {
            number::push_value(&mut self.0.0, v.0);
        }
        let n = u32::try_from(self.0.0.len() - before)
            .map_err(|_| de::Error::custom("a list of over 4 billion values"))?;
        self.0.1.push(n);
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        number::push_value(&mut self.0.0, v);
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.visit_f64(v as f64)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.visit_f64(v as f64)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.visit_f64(f64::NAN)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        let n = number::parse_text(v)
            .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &"a number"))?;
        self.visit_f64(n)
    }
}

/// `errors`: per request, an empty string on success. A null or non-string element
/// counts as no error.
struct Errors(Vec<bool>);

impl<'de> Deserialize<'de> for Errors {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Errors;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of error strings")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Errors, A::Error> {
                let mut out = Vec::new();
                while let Some(s) = seq.next_element::<Scalar>()? {
                    out.push(matches!(s, Scalar::Text(t) if !t.is_empty()));
                }
                Ok(Errors(out))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Errors, E> {
                Ok(Errors(Vec::new()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A top-level value: kept when it is a number or a short string.
enum Scalar {
    Number(f64),
    Text(String),
    Null,
    Other,
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Number(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Number(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::Number(v as f64))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        // The non-finite placeholders (and "inf", as vLLM writes a rate) are numbers.
        if let Some(n) = number::parse_text(v).filter(|n| !n.is_finite()) {
            return Ok(Scalar::Number(n));
        }
        Ok(if v.len() <= KEPT_TEXT {
            Scalar::Text(v.to_owned())
        } else {
            Scalar::Other
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}
