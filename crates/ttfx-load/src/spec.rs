//! What a load is: where it goes, what it sends, how requests are paced and for how
//! long. Plain values, checked once ([`LoadSpec::check`]) before anything is sent.

use std::path::PathBuf;
use std::time::Duration;

use ttfx_core::ChatApi;
use ttfx_core::stats::Budget;

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// Open loop: Poisson arrivals at this many requests per second, each sent at its
    /// scheduled time whatever the earlier ones are doing.
    Rate(f64),
    /// Closed loop: this many streams at once; each worker sends its next request when
    /// its last one ends.
    Concurrency(usize),
}

impl Mode {
    pub fn kind(self) -> &'static str {
        match self {
            Mode::Rate(_) => "rate",
            Mode::Concurrency(_) => "concurrency",
        }
    }
}

/// A request header sent with every request. Its value may be a key: it is never
/// printed or written to a report (only its name is).
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
}

impl std::fmt::Debug for Header {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Header({}: <hidden>)", self.name)
    }
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// An absolute http:// or https:// URL (query included: a simulator's overrides).
    pub url: String,
    /// The API spoken: the request body's shape and the reply's dialect.
    pub api: ChatApi,
    pub headers: Vec<Header>,
    /// Extra CA certificates (PEM) trusted for https besides the public roots.
    pub ca_file: Option<PathBuf>,
}

/// One load.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSpec {
    pub endpoint: Endpoint,
    /// What reports call the target (`sim/default?ttft_ms=200`, a URL without its query).
    pub label: String,
    /// The `model` field of each body (where the API has one).
    pub model: String,
    /// Request i sends prompt i mod n.
    pub prompts: Vec<String>,
    pub mode: Mode,
    /// Requests sent (open loop: scheduled) in the first `warmup` are sent and read but
    /// left out of every figure: connections are being opened and a server's queue fills.
    pub warmup: Duration,
    /// How long the measured window lasts after the warm-up; `None` runs until stopped.
    pub duration: Option<Duration>,
    /// Names the open loop's arrival schedule.
    pub seed: u64,
    /// Longest one request may take from its send to its stream's end; then it counts as
    /// a `timeout` error.
    pub timeout: Duration,
    /// Goodput's SLOs: a request is good when it completed and meets every one.
    pub goodput: Vec<Budget>,
}

/// Most requests per second a spec may ask for: far above what two cores send (about
/// a thousand streams a second, docs/load.md); more is a typo.
pub const MAX_RATE: f64 = 100_000.0;
/// Most streams a closed loop may hold: each is a connection and a file descriptor.
pub const MAX_CONCURRENCY: usize = 10_000;

/// What is wrong with a spec.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    #[error("rate {0}: expected requests per second above 0 and at most {MAX_RATE}")]
    Rate(f64),
    #[error("concurrency {0}: expected 1 to {MAX_CONCURRENCY} streams")]
    Concurrency(usize),
    #[error("URL `{0}`: expected an absolute http:// or https:// URL")]
    Url(String),
    #[error("no prompt to send")]
    NoPrompt,
    #[error("timeout: expected more than 0 s")]
    Timeout,
    #[error("duration: expected more than 0 s (or none, to run until stopped)")]
    Duration,
    #[error("header `{0}`: not a valid header name")]
    HeaderName(String),
    #[error("header `{0}`: its value is not a valid header value")]
    HeaderValue(String),
}

impl LoadSpec {
    /// Every check that can fail before a request is sent.
    pub fn check(&self) -> Result<(), SpecError> {
        match self.mode {
            Mode::Rate(r) if !(r.is_finite() && r > 0.0 && r <= MAX_RATE) => {
                return Err(SpecError::Rate(r));
            }
            Mode::Concurrency(c) if c == 0 || c > MAX_CONCURRENCY => {
                return Err(SpecError::Concurrency(c));
            }
            _ => {}
        }
        if !ttfx_core::target::is_http(&self.endpoint.url)
            || self.endpoint.url.parse::<hyper::Uri>().is_err()
        {
            return Err(SpecError::Url(ttfx_core::target::url_for_report(
                &self.endpoint.url,
            )));
        }
        if self.prompts.is_empty() {
            return Err(SpecError::NoPrompt);
        }
        if self.timeout.is_zero() {
            return Err(SpecError::Timeout);
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            return Err(SpecError::Duration);
        }
        for h in &self.endpoint.headers {
            if hyper::header::HeaderName::from_bytes(h.name.as_bytes()).is_err() {
                return Err(SpecError::HeaderName(h.name.clone()));
            }
            if hyper::header::HeaderValue::from_str(&h.value).is_err() {
                return Err(SpecError::HeaderValue(h.name.clone()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn spec() -> LoadSpec {
        LoadSpec {
            endpoint: Endpoint {
                url: "http://127.0.0.1:9/v1/chat/completions".into(),
                api: ChatApi::OpenAiChat,
                headers: Vec::new(),
                ca_file: None,
            },
            label: "t".into(),
            model: "m".into(),
            prompts: vec!["hi".into()],
            mode: Mode::Rate(10.0),
            warmup: Duration::ZERO,
            duration: Some(Duration::from_secs(1)),
            seed: 1,
            timeout: Duration::from_secs(1),
            goodput: Vec::new(),
        }
    }

    #[test]
    fn a_bad_spec_says_what_to_fix_and_never_shows_a_header_value() {
        assert_eq!(spec().check(), Ok(()));
        let with = |f: &dyn Fn(&mut LoadSpec)| {
            let mut s = spec();
            f(&mut s);
            s.check().unwrap_err().to_string()
        };
        assert!(with(&|s| s.mode = Mode::Rate(0.0)).contains("rate 0"));
        assert!(with(&|s| s.mode = Mode::Rate(f64::NAN)).contains("rate NaN"));
        assert!(with(&|s| s.mode = Mode::Concurrency(0)).contains("concurrency 0"));
        assert!(
            with(&|s| s.endpoint.url = "ftp://u:secret@h/x?k=1".into()).contains("`ftp://h/x`")
        );
        assert!(with(&|s| s.prompts.clear()).contains("no prompt"));
        assert!(with(&|s| s.timeout = Duration::ZERO).contains("timeout"));
        let bad_value = with(&|s| {
            s.endpoint.headers.push(Header {
                name: "authorization".into(),
                value: "Bearer s3cret\n".into(),
            })
        });
        assert!(
            bad_value.contains("authorization") && !bad_value.contains("s3cret"),
            "{bad_value}"
        );
        let shown = format!(
            "{:?}",
            Header {
                name: "x-api-key".into(),
                value: "s3cret".into()
            }
        );
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
