//! `ttfx serve --config FILE`: the proxy's upstreams and extra simulator profiles, in
//! TOML.
//!
//! ```toml
//! [upstreams.openai]
//! base_url = "https://api.openai.com/v1"  # https (port 443 by default) or http
//! api_key_env = "OPENAI_API_KEY"          # or api_key = "…"; added server-side
//! auth = "bearer"                         # bearer | x-api-key | api-key | none
//!
//! [upstreams.lab]
//! base_url = "https://10.0.0.5:8443/v1"   # an IP address is checked against the cert's IPs
//! ca_file = "lab-ca.pem"                  # a private CA (PEM), trusted besides the public
//!                                         # roots; relative to this file's directory
//!
//! [upstreams.local]
//! base_url = "http://127.0.0.1:9000/v1"   # plain HTTP
//! # insecure = true                       # a key over plain HTTP off loopback: refused without it
//!
//! [proxy]                                 # who may use the upstreams' keys (see access.rs)
//! allowed_origins = ["http://localhost:5173"]  # besides this server's own origin
//! allowed_hosts = ["lab.internal"]        # Host values besides loopback ones
//!
//! [profiles.my-model]                     # /sim/my-model/…
//! base = "default"                        # a built-in profile to start from
//! ttft_ms = 450
//! tokens_per_second = 75
//! ```
//!
//! Every problem is one line naming the file and the item; nothing starts listening.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use axum::http::Uri;
use serde::Deserialize;

use ttfx_edge::access::ProxyAccess;
use ttfx_proxy::upstream::Upstreams;
use ttfx_sim::profile::{self, BadOverride, Profile};

pub use self::upstream::UpstreamProblem;
use self::upstream::{FileUpstream, upstream};

mod upstream;

#[derive(Debug, Default)]
pub struct Config {
    pub upstreams: Upstreams,
    pub profiles: Vec<(String, Profile)>,
    pub proxy_access: ProxyAccess,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    upstreams: BTreeMap<String, FileUpstream>,
    #[serde(default)]
    profiles: BTreeMap<String, toml::Table>,
    #[serde(default)]
    proxy: FileProxy,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileProxy {
    #[serde(default)]
    allowed_origins: Vec<String>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
}

/// Why `load` refused a config file: the file, then what. Each text is one line and
/// carries its cause (no `source` chain, so a `{:#}` print says it once).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config {}: cannot read: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("config {}: {problem}", path.display())]
    Invalid {
        path: PathBuf,
        problem: ConfigProblem,
    },
}

/// What is wrong in a config's text ([`parse`]): the item, then what.
#[derive(Debug, thiserror::Error)]
pub enum ConfigProblem {
    #[error("line {line}, column {column}: {message}")]
    SyntaxAt {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{message}")]
    Syntax { message: String },
    #[error("upstream `{name}`: {problem}")]
    Upstream {
        name: String,
        problem: UpstreamProblem,
    },
    #[error("profile `{name}`: {problem}")]
    Profile {
        name: String,
        problem: ProfileProblem,
    },
    #[error("[proxy] allowed_origins: `{0}` is not an origin like http://host:port")]
    NotAnOrigin(String),
}

/// An upstream's or a profile's name that cannot be a URL path segment.
#[derive(Debug, thiserror::Error)]
#[error("the name must be 1-64 letters, digits, `-`, `_` or `.`")]
pub struct BadName;

/// What is wrong in one `[profiles.NAME]` table.
#[derive(Debug, thiserror::Error)]
pub enum ProfileProblem {
    #[error(transparent)]
    Name(BadName),
    #[error("base must be a string naming a built-in profile")]
    BaseNotAString,
    #[error("base `{base}` is not a built-in profile ({})", builtin_names().join(", "))]
    UnknownBase { base: String },
    #[error("{key}: array items must be integers")]
    NotAnIntegerItem { key: String },
    #[error("{key}: expected a string, number, boolean or array")]
    UnusableValue { key: String },
    #[error(transparent)]
    Override(BadOverride),
}

fn builtin_names() -> Vec<&'static str> {
    profile::builtin().iter().map(|(n, _)| *n).collect()
}

pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|cause| ConfigError::Read {
        path: path.to_path_buf(),
        cause,
    })?;
    let dir = path.parent().unwrap_or(Path::new(""));
    parse(&text, dir, |name| std::env::var(name).ok()).map_err(|problem| ConfigError::Invalid {
        path: path.to_path_buf(),
        problem,
    })
}

/// Parses a config; relative file names in it (`ca_file`) are under `dir`, and `env`
/// looks up environment variables (a parameter so tests need not change the process
/// environment).
pub fn parse(
    text: &str,
    dir: &Path,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Config, ConfigProblem> {
    let file: FileConfig = toml::from_str(text).map_err(|e| {
        let message = e.message().replace('\n', " ").trim().to_owned();
        match e.span() {
            Some(s) => {
                let before = &text[..s.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                ConfigProblem::SyntaxAt {
                    line,
                    column,
                    message,
                }
            }
            None => ConfigProblem::Syntax { message },
        }
    })?;
    let mut upstreams = Vec::new();
    for (name, u) in file.upstreams {
        match upstream(&name, u, dir, &env) {
            Ok(upstream) => upstreams.push(upstream),
            Err(problem) => return Err(ConfigProblem::Upstream { name, problem }),
        }
    }
    let mut profiles = Vec::new();
    for (name, table) in file.profiles {
        match profile(&name, table) {
            Ok(p) => profiles.push((name, p)),
            Err(problem) => return Err(ConfigProblem::Profile { name, problem }),
        }
    }
    for origin in &file.proxy.allowed_origins {
        let ok = origin
            .parse::<Uri>()
            .is_ok_and(|u| u.scheme().is_some() && u.authority().is_some() && u.path() == "/");
        if !ok {
            return Err(ConfigProblem::NotAnOrigin(origin.clone()));
        }
    }
    Ok(Config {
        upstreams: Upstreams(upstreams),
        profiles,
        proxy_access: ProxyAccess {
            allowed_origins: file.proxy.allowed_origins,
            allowed_hosts: file.proxy.allowed_hosts,
            // Not in the file: `ttfx serve` adds it (--proxy-token-file, or made at start).
            token: None,
        },
    })
}

/// Names appear in URL paths (`/proxy/NAME/…`, `/sim/NAME/…`).
fn check_name(name: &str) -> Result<(), BadName> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if ok { Ok(()) } else { Err(BadName) }
}

fn profile(name: &str, mut table: toml::Table) -> Result<Profile, ProfileProblem> {
    check_name(name).map_err(ProfileProblem::Name)?;
    let base = match table.remove("base") {
        None => "default".to_owned(),
        Some(toml::Value::String(s)) => s,
        Some(_) => return Err(ProfileProblem::BaseNotAString),
    };
    let builtin = profile::builtin();
    let Some((_, mut p)) = builtin.into_iter().find(|(n, _)| *n == base) else {
        return Err(ProfileProblem::UnknownBase { base });
    };
    let mut pairs = Vec::new();
    for (key, value) in table {
        let text = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    toml::Value::Integer(i) => Ok(i.to_string()),
                    _ => Err(ProfileProblem::NotAnIntegerItem { key: key.clone() }),
                })
                .collect::<Result<Vec<_>, _>>()?
                .join(","),
            _ => return Err(ProfileProblem::UnusableValue { key }),
        };
        pairs.push((key, text));
    }
    p.apply(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(ProfileProblem::Override)?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ttfx_core::ChatApi;
    use ttfx_core::decode::DialectKind;
    use ttfx_proxy::presets;
    use ttfx_proxy::upstream::{Auth, Timeouts};

    fn env(name: &str) -> Option<String> {
        (name == "SIM_KEY").then(|| "sk-test-123".to_owned())
    }

    fn parse_here(text: &str, env: fn(&str) -> Option<String>) -> Result<Config, ConfigProblem> {
        parse(text, Path::new(""), env)
    }

    fn err(text: &str) -> String {
        format!("{:#}", parse_here(text, env).unwrap_err())
    }

    /// `ttfx: {e:#}` walks `source()`: a problem carries its cause in its own text and
    /// no chain, so the cause is printed once, after the file and the item.
    #[test]
    fn a_problem_names_the_file_and_the_item_without_a_source_chain() {
        let problem = parse_here("[upstreams.x]\nbase_url = \"ftp://h\"\n", env).unwrap_err();
        let e = ConfigError::Invalid {
            path: PathBuf::from("c.toml"),
            problem,
        };
        assert_eq!(
            e.to_string(),
            "config c.toml: upstream `x`: base_url `ftp://h` must start with http:// or https://"
        );
        assert!(std::error::Error::source(&e).is_none());
    }

    #[test]
    fn a_key_over_plain_http_off_loopback_needs_insecure() {
        let remote = "[upstreams.r]\nbase_url = \"http://10.1.2.3:8000/v1\"\napi_key = \"k\"\n";
        assert!(err(remote).contains("clear text"), "{}", err(remote));
        assert!(parse_here(&format!("{remote}insecure = true\n"), env).is_ok());
        // No key, or a loopback host: nothing crosses the network.
        assert!(
            parse_here(
                "[upstreams.r]\nbase_url = \"http://10.1.2.3:8000/v1\"\n",
                env
            )
            .is_ok()
        );
        assert!(
            parse_here(
                "[upstreams.r]\nbase_url = \"http://localhost:8000/v1\"\napi_key = \"k\"\n",
                env
            )
            .is_ok()
        );
    }

    #[test]
    fn a_preset_fills_base_url_auth_headers_and_chat_and_the_config_wins() {
        let c = parse_here(
            "[upstreams.claude]\npreset = \"anthropic\"\nbase_url = \"http://127.0.0.1:9/x\"\n\
             api_key_env = \"SIM_KEY\"\n\
             [upstreams.llama]\npreset = \"llamacpp\"\n\
             [upstreams.o]\npreset = \"ollama\"\napi = \"ollama-generate\"\n\
             [upstreams.gw]\nbase_url = \"http://127.0.0.1:9\"\napi = \"anthropic\"\n\
             api_path = \"/chat\"\nheaders = { \"anthropic-version\" = \"2099-01-01\" }\n",
            env,
        )
        .unwrap();
        let claude = c.upstreams.get("claude").unwrap();
        assert_eq!(claude.preset, Some("anthropic"));
        assert_eq!(
            (claude.authority.as_str(), claude.path.as_str()),
            ("127.0.0.1:9", "/x")
        );
        assert_eq!(claude.auth, Auth::XApiKey);
        assert_eq!(claude.headers.len(), 1);
        assert_eq!(claude.headers[0].0, "anthropic-version");
        let chat = claude.chat.as_ref().unwrap();
        assert_eq!(
            (chat.api, chat.path.as_str()),
            (ChatApi::AnthropicMessages, "v1/messages")
        );
        let llama = c.upstreams.get("llama").unwrap();
        assert_eq!(llama.authority, "127.0.0.1:8080");
        assert!(llama.key.is_none());
        assert_eq!(llama.chat.as_ref().unwrap().dialect, DialectKind::LlamaCpp);
        // Another API than the preset's brings its own path and dialect.
        let o = c.upstreams.get("o").unwrap().chat.clone().unwrap();
        assert_eq!(
            (o.api, o.path.as_str()),
            (ChatApi::OllamaGenerate, "api/generate")
        );
        let gw = c.upstreams.get("gw").unwrap();
        assert_eq!(gw.chat.as_ref().unwrap().path, "chat");
        assert_eq!(gw.headers[0].1, "2099-01-01");
        assert!(gw.preset.is_none() && gw.auth == Auth::Bearer);
    }

    #[test]
    fn every_preset_with_a_base_url_parses_from_its_name_alone() {
        for p in &presets::PRESETS {
            let text = format!("[upstreams.x]\npreset = \"{}\"\napi_key = \"k\"\n", p.name);
            let Some(base) = p.base_url else {
                assert!(err(&text).contains("needs base_url"), "{}", p.name);
                continue;
            };
            let c = parse_here(&text, env).unwrap_or_else(|e| panic!("{}: {e:#}", p.name));
            let u = &c.upstreams.0[0];
            assert_eq!(u.tls.is_some(), base.starts_with("https://"), "{}", p.name);
            assert_eq!(u.chat.as_ref().unwrap().api, p.api, "{}", p.name);
            assert_eq!(u.auth, p.auth, "{}", p.name);
        }
    }

    #[test]
    fn azure_needs_its_host_and_a_version_for_deployment_paths() {
        let e = err("[upstreams.az]\npreset = \"azure-openai\"\n");
        assert!(e.contains("needs base_url"), "{e}");
        let deploy = "[upstreams.az]\npreset = \"azure-openai\"\n\
                      base_url = \"http://127.0.0.1:9/openai/deployments/gpt\"\n";
        assert!(err(deploy).contains("needs api_version"), "{}", err(deploy));
        let c = parse_here(&format!("{deploy}api_version = \"2024-10-21\"\n"), env).unwrap();
        let az = c.upstreams.get("az").unwrap();
        assert_eq!(az.api_version.as_deref(), Some("2024-10-21"));
        assert_eq!(az.auth, Auth::ApiKey);
        assert_eq!(az.chat.as_ref().unwrap().path, "chat/completions");
        let v1 = "[upstreams.az]\npreset = \"azure-openai\"\n\
                  base_url = \"http://127.0.0.1:9/openai/v1\"\n";
        assert!(
            parse_here(v1, env).unwrap().upstreams.0[0]
                .api_version
                .is_none()
        );
        let other = "[upstreams.x]\nbase_url = \"http://h\"\napi_version = \"1\"\n";
        assert!(
            err(other).contains("\"azure-openai\" only"),
            "{}",
            err(other)
        );
    }

    #[test]
    fn preset_problems_are_named() {
        for (text, want) in [
            (
                "[upstreams.x]\npreset = \"gpt\"\n",
                "preset `gpt` is not a provider preset",
            ),
            ("[upstreams.x]\n", "base_url is missing"),
            (
                "[upstreams.x]\npreset = \"vllm\"\nheaders = { authorization = \"k\" }\n",
                "carries a key",
            ),
            (
                "[upstreams.x]\npreset = \"vllm\"\napi = \"grpc\"\n",
                "api: unknown API `grpc`",
            ),
            (
                "[upstreams.x]\npreset = \"vllm\"\ndialect = \"xml\"\n",
                "dialect:",
            ),
            (
                "[upstreams.x]\nbase_url = \"http://h\"\napi_path = \"v1\"\n",
                "need api",
            ),
            (
                "[upstreams.x]\npreset = \"vllm\"\napi_path = \"../admin\"\n",
                "a plain path below base_url",
            ),
        ] {
            let e = err(text);
            assert!(e.contains(want), "{text:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn https_upstreams_default_to_port_443_and_may_carry_a_key_anywhere() {
        let c = parse_here(
            "[upstreams.o]\nbase_url = \"https://api.openai.com/v1\"\napi_key = \"k\"\n\
             [upstreams.ip]\nbase_url = \"https://10.1.2.3:8443\"\napi_key = \"k\"\n\
             [upstreams.v6]\nbase_url = \"https://[::1]:8443\"\n",
            env,
        )
        .unwrap();
        let o = c.upstreams.get("o").unwrap();
        assert_eq!(
            (o.authority.as_str(), o.host.as_str(), o.path.as_str()),
            ("api.openai.com:443", "api.openai.com", "/v1")
        );
        assert!(o.tls.is_some());
        assert_eq!(c.upstreams.get("ip").unwrap().authority, "10.1.2.3:8443");
        let v6 = c.upstreams.get("v6").unwrap();
        assert_eq!(
            (v6.authority.as_str(), v6.host.as_str()),
            ("[::1]:8443", "[::1]:8443")
        );
        assert!(
            parse_here("[upstreams.l]\nbase_url = \"http://localhost:1\"\n", env)
                .unwrap()
                .upstreams
                .0[0]
                .tls
                .is_none()
        );
    }

    #[test]
    fn a_ca_file_is_read_at_startup_relative_to_the_config() {
        let dir = std::env::temp_dir().join(format!("ttfx-config-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = "[upstreams.x]\nbase_url = \"https://h\"\nca_file = \"ca.pem\"\n";
        // Not a certificate: one line naming the file.
        std::fs::write(dir.join("ca.pem"), "not a certificate\n").unwrap();
        let e = format!("{:#}", parse(text, &dir, env).unwrap_err());
        assert!(e.contains("ca_file") && e.contains("ca.pem"), "{e}");
        assert!(e.contains("no PEM certificate"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        // A CA certificate, made here.
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key).unwrap();
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        let c = parse(text, &dir, env).unwrap();
        assert!(c.upstreams.0[0].tls.is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn timeouts_default_and_parse_and_zero_is_refused() {
        let base = "[upstreams.r]\nbase_url = \"http://127.0.0.1:1/v1\"\n";
        let c = parse_here(base, env).unwrap();
        assert_eq!(c.upstreams.0[0].timeouts, Timeouts::DEFAULT);
        let c = parse_here(&format!("{base}idle_timeout_ms = 250\n"), env).unwrap();
        assert_eq!(c.upstreams.0[0].timeouts.idle.as_millis(), 250);
        let e = err(&format!("{base}header_timeout_ms = 0\n"));
        assert!(e.contains("header_timeout_ms = 0"), "{e}");
    }

    #[test]
    fn proxy_access_lists_parse_and_bad_origins_are_named() {
        let c = parse_here(
            "[proxy]\nallowed_origins = [\"http://localhost:5173\"]\nallowed_hosts = [\"lab.internal\"]\n",
            env,
        )
        .unwrap();
        assert_eq!(c.proxy_access.allowed_origins, ["http://localhost:5173"]);
        assert_eq!(c.proxy_access.allowed_hosts, ["lab.internal"]);
        let e = err("[proxy]\nallowed_origins = [\"http://x/path\"]\n");
        assert!(e.contains("http://x/path"), "{e}");
    }

    #[test]
    fn upstreams_and_profiles_parse() {
        let c = parse_here(
            r#"
            [upstreams.local]
            base_url = "http://127.0.0.1:9000/v1/"
            api_key_env = "SIM_KEY"
            auth = "x-api-key"
            [upstreams.bare]
            base_url = "http://localhost:8081"
            [profiles.quick]
            base = "reasoning"
            ttft_ms = 50
            stall_at = [3, 5]
            buffered = true
            "#,
            env,
        )
        .unwrap();
        let local = c.upstreams.get("local").unwrap();
        assert_eq!(local.authority, "127.0.0.1:9000");
        assert_eq!(local.host, "127.0.0.1:9000");
        assert!(local.tls.is_none());
        assert_eq!(local.path, "/v1");
        assert_eq!(local.key.as_ref().unwrap().expose(), "sk-test-123");
        assert_eq!(local.auth, Auth::XApiKey);
        let bare = c.upstreams.get("bare").unwrap();
        assert_eq!(
            (bare.authority.as_str(), bare.path.as_str()),
            ("localhost:8081", "")
        );
        assert!(bare.key.is_none());
        let (name, p) = &c.profiles[0];
        assert_eq!(name, "quick");
        assert_eq!(p.stall_at, [3, 5]);
        assert!(p.reasoning_tokens > 0);
        // The key never shows in Debug output.
        assert!(!format!("{c:?}").contains("sk-test-123"));
    }

    #[test]
    fn problems_are_one_clear_line() {
        let cases = [
            ("[upstreams.x]\nbase_url = 3", "line 2, column 12"),
            (
                "[upstreams.x]\nbase_url = \"ftp://h\"",
                "upstream `x`: base_url `ftp://h` must start with http:// or https://",
            ),
            (
                "[upstreams.x]\nbase_url = \"https://h\"\nca_file = \"/nonexistent/ca.pem\"",
                "upstream `x`: ca_file `/nonexistent/ca.pem`: cannot read: ",
            ),
            (
                "[upstreams.x]\nbase_url = \"http://h\"\nca_file = \"ca.pem\"",
                "ca_file is for https upstreams",
            ),
            (
                "[upstreams.x]\nbase_url = \"https://h\"\ninsecure = true",
                "does not turn off certificate checks",
            ),
            (
                "[upstreams.x]\nbase_url = \"https://user:pw@h\"",
                "credentials in the URL are refused",
            ),
            (
                "[upstreams.x]\nbase_url = \"http://h\"\napi_key_env = \"NOPE\"",
                "environment variable `NOPE` is not set",
            ),
            (
                "[upstreams.x]\nbase_url = \"http://h\"\napi_key = \"a\"\napi_key_env = \"SIM_KEY\"",
                "not both",
            ),
            (
                "[upstreams.x]\nbase_url = \"http://h\"\nauth = \"basic\"",
                "auth `basic`",
            ),
            (
                "[upstreams.x]\nbase_url = \"http://h\"\nkey = \"a\"",
                "unknown field `key`",
            ),
            (
                "[upstreams.\"a b\"]\nbase_url = \"http://h\"",
                "upstream `a b`: the name must be",
            ),
            (
                "[profiles.p]\nttft_ms = \"soon\"",
                "profile `p`: override ttft_ms=soon: expected a number",
            ),
            (
                "[profiles.p]\nbase = \"nope\"",
                "base `nope` is not a built-in profile",
            ),
            ("[proxies]", "unknown field `proxies`"),
        ];
        for (text, want) in cases {
            let e = err(text);
            assert!(e.contains(want), "{text:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
