//! `ttfx load`: its arguments checked into a [`Command`] (before any server starts),
//! run on a runtime of its own, the table printed and the JSON written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ttfx_core::ChatApi;
use ttfx_core::target::Target;

use crate::args::LoadArgs;
use crate::error::LoadError;
use crate::spec::{Endpoint, Header, LoadSpec, Mode};

/// The prompt when none is given: a short question, so a real model's reply is short.
pub const DEFAULT_PROMPT: &str = "In one sentence: why does the sky look blue?";

/// `ttfx load`, checked.
#[derive(Debug)]
pub struct Command {
    target: Target,
    /// The spec, but for its URL when the target is served locally.
    spec: LoadSpec,
    config: Option<PathBuf>,
    json: Option<PathBuf>,
}

impl Command {
    /// Every check of the arguments: target, API, pace, SLOs, headers and the key's
    /// variable.
    pub fn from_args(args: &LoadArgs) -> Result<Command, LoadError> {
        let target = Target::parse(&args.target)?;
        if let Target::Page { .. } = target {
            return Err(LoadError::PageTarget(target.label()));
        }
        let api = match (&args.api, &target) {
            (Some(name), _) => name.parse::<ChatApi>()?,
            (None, Target::Endpoint { url }) => {
                ChatApi::from_path(url).unwrap_or(ChatApi::OpenAiChat)
            }
            (None, _) => ChatApi::OpenAiChat,
        };
        let mode = match (args.rate, args.concurrency) {
            (Some(rate), _) => Mode::Rate(rate),
            (None, Some(c)) => Mode::Concurrency(c),
            // clap's group requires one; a library caller that gave neither gets the
            // spec's own refusal.
            (None, None) => Mode::Rate(0.0),
        };
        let mut headers = Vec::new();
        if let Some(name) = &args.api_key_env {
            let key = std::env::var(name).map_err(|_| LoadError::ApiKeyEnv(name.clone()))?;
            headers.extend(key_headers(api, key));
        }
        for h in &args.header {
            let (name, value) = h
                .split_once(':')
                .filter(|(n, _)| !n.trim().is_empty())
                .ok_or_else(|| LoadError::HeaderForm(header_name(h)))?;
            headers.push(Header {
                name: name.trim().to_ascii_lowercase(),
                value: value.trim().to_owned(),
            });
        }
        let goodput = args
            .goodput
            .iter()
            .map(|s| crate::slo::parse(s))
            .collect::<Result<Vec<_>, _>>()?;
        let url = match &target {
            Target::Endpoint { url } => url.clone(),
            // Resolved against the local server in `spec`; checked there.
            _ => "http://127.0.0.1/".into(),
        };
        let spec = LoadSpec {
            endpoint: Endpoint {
                url,
                api,
                headers,
                ca_file: args.ca_file.clone(),
            },
            label: target.label(),
            model: args.model.clone(),
            prompts: if args.prompt.is_empty() {
                vec![DEFAULT_PROMPT.to_owned()]
            } else {
                args.prompt.clone()
            },
            mode,
            warmup: args.warmup,
            duration: Some(args.duration),
            seed: args.seed,
            timeout: args.timeout,
            goodput,
        };
        spec.check()?;
        Ok(Command {
            target,
            spec,
            config: args.config.clone(),
            json: args.json.clone(),
        })
    }

    /// A `sim/` or `proxy/` target: the caller starts `ttfx serve`'s router on
    /// loopback and passes its base URL to [`Command::spec`].
    pub fn needs_local_server(&self) -> bool {
        matches!(self.target, Target::Sim { .. } | Target::Proxy { .. })
    }

    /// `--config`, for the local server.
    pub fn config(&self) -> Option<&Path> {
        self.config.as_deref()
    }

    /// The spec, its URL resolved against `local_base` (`http://127.0.0.1:PORT`) for a
    /// target served locally.
    pub fn spec(&self, local_base: Option<&str>) -> Result<LoadSpec, LoadError> {
        let mut spec = self.spec.clone();
        if self.needs_local_server() {
            let base = local_base.ok_or_else(|| LoadError::NoLocalServer(self.target.label()))?;
            let path = self
                .target
                .endpoint_url(spec.endpoint.api.path())
                .unwrap_or_default();
            spec.endpoint.url = format!("{}{path}", base.trim_end_matches('/'));
            spec.check()?;
        }
        Ok(spec)
    }

    /// Runs the load (Ctrl-C stops it and reports what was measured), prints the table,
    /// writes the JSON.
    pub fn run(self, local_base: Option<&str>) -> Result<ExitCode, LoadError> {
        let spec = self.spec(local_base)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(LoadError::Runtime)?;
        eprintln!("{}", crate::table::starting(&spec));
        let report = runtime.block_on(async {
            let cancel = crate::CancellationToken::new();
            let stop = cancel.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!("ttfx load: stopping (Ctrl-C): requests in flight are cancelled");
                    stop.cancel();
                }
            });
            crate::run(spec, cancel).await
        })?;
        print!("{}", crate::table::render(&report));
        if let Some(path) = &self.json {
            let mut text = serde_json::to_string_pretty(&report).unwrap_or_default();
            text.push('\n');
            std::fs::write(path, text).map_err(|cause| LoadError::WriteJson {
                path: path.clone(),
                cause,
            })?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// The headers an API's servers take a key in.
fn key_headers(api: ChatApi, key: String) -> Vec<Header> {
    let header = |name: &str, value: String| Header {
        name: name.into(),
        value,
    };
    match api {
        ChatApi::AnthropicMessages => vec![
            header("x-api-key", key),
            // The Messages API refuses a request without a version.
            header("anthropic-version", "2023-06-01".into()),
        ],
        _ => vec![header("authorization", format!("Bearer {key}"))],
    }
}

/// What an error may show of a `--header` argument: the text before its first `:` or
/// `=` (a name, never a value), cut short.
fn header_name(text: &str) -> String {
    let name = text.split([':', '=']).next().unwrap_or_default().trim();
    ttfx_core::printable::cut(name, 64).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        load: LoadArgs,
    }

    fn command(args: &[&str]) -> Result<Command, LoadError> {
        let cli = Cli::try_parse_from(std::iter::once("ttfx-load").chain(args.iter().copied()))
            .map_err(|e| LoadError::HeaderForm(e.to_string()))?;
        Command::from_args(&cli.load)
    }

    #[test]
    fn targets_resolve_to_their_url_and_api() {
        let sim = command(&["--target", "sim/default?ttft_ms=200", "--rate", "5"]).unwrap();
        assert!(sim.needs_local_server());
        let spec = sim.spec(Some("http://127.0.0.1:4000/")).unwrap();
        assert_eq!(
            spec.endpoint.url,
            "http://127.0.0.1:4000/sim/default/v1/chat/completions?ttft_ms=200"
        );
        assert_eq!(spec.label, "sim/default?ttft_ms=200");
        assert!(
            sim.spec(None)
                .unwrap_err()
                .to_string()
                .contains("sim/default")
        );

        let anthropic = command(&[
            "--target",
            "https://h.example/v1/messages",
            "--concurrency",
            "2",
        ])
        .unwrap();
        assert!(!anthropic.needs_local_server());
        let spec = anthropic.spec(None).unwrap();
        assert_eq!(spec.endpoint.api, ChatApi::AnthropicMessages);
        assert_eq!(spec.mode, Mode::Concurrency(2));
        assert_eq!(spec.prompts, [DEFAULT_PROMPT]);
    }

    #[test]
    fn bad_arguments_say_what_to_fix_and_never_show_a_secret() {
        let err = |args: &[&str]| command(args).unwrap_err().to_string();
        assert!(
            err(&["--target", "sim/x"]).contains("--rate"),
            "one pace is required"
        );
        assert!(
            err(&["--target", "sim/x", "--rate", "1", "--concurrency", "2"])
                .contains("cannot be used with")
        );
        assert!(err(&["--target", "page:http://h/", "--rate", "1"]).contains("`ttfx run`"));
        assert!(err(&["--target", "sim/x", "--rate=-3"]).contains("rate -3"));
        assert!(
            err(&["--target", "sim/x", "--rate", "1", "--api", "gemini"])
                .contains("unknown API `gemini`")
        );
        assert!(
            err(&["--target", "sim/x", "--rate", "1", "--goodput", "ttft<=5"])
                .contains("unknown metric `ttft`")
        );
        let missing = err(&[
            "--target",
            "sim/x",
            "--rate",
            "1",
            "--api-key-env",
            "TTFX_LOAD_TEST_UNSET_KEY",
        ]);
        assert!(
            missing.contains("TTFX_LOAD_TEST_UNSET_KEY: the variable is not set"),
            "{missing}"
        );
        let header = err(&[
            "--target",
            "sim/x",
            "--rate",
            "1",
            "--header",
            "x-key=s3cret",
        ]);
        assert!(
            header.contains("`x-key`") && !header.contains("s3cret"),
            "{header}"
        );
        let url = err(&[
            "--target",
            "http://u:s3cret@h:1/v1/chat completions?key=k2",
            "--rate",
            "1",
        ]);
        assert!(url.contains("`http://h:1/v1/chat completions`"), "{url}");
        assert!(!url.contains("s3cret") && !url.contains("k2"), "{url}");
    }

    #[test]
    fn a_key_goes_in_its_apis_header() {
        let names = |api| {
            key_headers(api, "k".into())
                .into_iter()
                .map(|h| (h.name, h.value))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(ChatApi::OpenAiChat),
            [("authorization".into(), "Bearer k".into())]
        );
        assert_eq!(
            names(ChatApi::AnthropicMessages)[0],
            ("x-api-key".into(), "k".into())
        );
    }
}
