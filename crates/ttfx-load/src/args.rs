//! `ttfx load`'s options (the binary's command line embeds them).

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args};

#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("pace").required(true).args(["rate", "concurrency"])))]
pub struct LoadArgs {
    /// What to drive: sim/PROFILE[?key=value&…] (a simulator started in this process;
    /// overrides as in docs/serve.md), proxy/UPSTREAM (with --config), or
    /// http(s)://ENDPOINT.
    #[arg(long)]
    pub target: String,

    /// The API the requests speak: openai-chat, openai-responses, anthropic,
    /// ollama-chat, ollama-generate or llamacpp. Default: the API whose path the
    /// endpoint has, else openai-chat.
    #[arg(long, value_name = "API")]
    pub api: Option<String>,

    /// Open loop: Poisson arrivals at this many requests per second, each sent at its
    /// scheduled time whatever the earlier ones are doing.
    #[arg(long, value_name = "REQ_PER_S")]
    pub rate: Option<f64>,

    /// Closed loop: this many streams at once, each sending its next request when its
    /// last one ends.
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,

    /// How long the measured window lasts, after the warm-up (e.g. 30s, 500ms, 2m).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Requests sent in this first stretch are read but left out of every figure.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub warmup: Duration,

    /// Longest a request may take from its send to its stream's end; then it counts as a
    /// timeout. Requests still open at the window's end are awaited up to it.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Names the open loop's arrival schedule: the same seed and rate send at the same
    /// moments.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// A prompt (repeat for several; requests cycle through them).
    #[arg(long)]
    pub prompt: Vec<String>,

    /// The model named in each request body.
    #[arg(long, default_value = "ttfx-load")]
    pub model: String,

    /// A goodput SLO, METRIC<=LIMIT (METRIC>=LIMIT for a rate), e.g. ttft_ms<=500
    /// (repeatable): goodput counts the requests that completed within every one.
    #[arg(long, value_name = "SLO")]
    pub goodput: Vec<String>,

    /// The environment variable holding the API key, sent as `Authorization: Bearer`
    /// (`x-api-key` for anthropic). Never printed or written.
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,

    /// An extra request header, NAME: VALUE (repeatable). Its value is never printed or
    /// written.
    #[arg(long, value_name = "HEADER")]
    pub header: Vec<String>,

    /// A PEM file of CA certificates trusted for https besides the public roots.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,

    /// `ttfx serve --config` file for the local server of sim/ and proxy/ targets.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Write the report as JSON here (docs/load.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// A duration as written on a command line: a number with `ms`, `s` or `m` (`500ms`,
/// `1.5s`, `2m`); a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .and_then(|v| Duration::try_from_secs_f64(v * scale).ok())
        .ok_or_else(|| format!("`{text}`: expected a duration such as 30s, 500ms or 2m"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_with_their_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration(" 3 "), Ok(Duration::from_secs(3)));
        for bad in ["", "fast", "-1s", "1h", "nans"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.contains("expected a duration"), "{bad}: {err}");
        }
    }
}
