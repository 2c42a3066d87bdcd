//! `ttfx serve`'s options (the binary's command line embeds them).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use ttfx_collect::read_access::{Secret, TokenSource};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (the chosen one is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// Folder holding the built lab page (Trunk's dist, with index.html).
    #[arg(long)]
    pub dist: Option<PathBuf>,

    /// TOML file naming the proxy's upstreams and extra simulator profiles
    /// (see docs/serve.md).
    #[arg(long)]
    pub config: Option<PathBuf>,

    /// Serve every response with COOP same-origin and COEP require-corp, so the lab page
    /// is cross-origin isolated and its clock steps 5 µs instead of 100 µs (Chromium).
    #[arg(long)]
    pub cross_origin_isolated: bool,

    /// Requests in flight at /sim and /proxy (a stream counts until its body ends); more
    /// get 503 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = ttfx_edge::inflight::DEFAULT_MAX_CONCURRENT,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_concurrent: u32,

    /// How long a request body may go without a byte, from its headers to its first byte
    /// and between two, before the request fails (400): a client that stops mid-body
    /// would otherwise hold its connection, and at /sim and /proxy one of the
    /// --max-concurrent places, for as long as it stays connected.
    #[arg(long, value_name = "MS", default_value_t = crate::connections::DEFAULT_BODY_TIMEOUT_MS,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub body_timeout_ms: u64,

    /// Connections served at once (every route); more wait in the kernel's backlog
    /// until one ends.
    #[arg(long, value_name = "N", default_value_t = crate::connections::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,

    /// How long a request head may take to arrive whole, and how long a kept-alive
    /// connection may wait idle for the next one, before the connection is closed: a
    /// client that sends half a head would otherwise hold its connection for ever.
    #[arg(long, value_name = "MS", default_value_t = crate::connections::DEFAULT_HEAD_TIMEOUT_MS,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub head_timeout_ms: u64,

    /// A file holding the proxy's token (one line, 32 to 1024 printable characters):
    /// every /proxy request must then carry it in the X-Ttfx-Proxy-Token header. Without
    /// it, a server listening beyond loopback whose upstreams hold keys makes one and
    /// prints it once on stderr (docs/serve.md).
    #[arg(long, value_name = "FILE")]
    pub proxy_token_file: Option<PathBuf>,

    /// Collect the probe's beacons and run reports at POST /collect into this SQLite
    /// file (created if missing), and answer /field/… queries over it (docs/field.md).
    #[arg(long, value_name = "FILE.db")]
    pub collect: Option<PathBuf>,

    /// An origin besides this server's own that may post to /collect and read /field/…,
    /// e.g. https://app.example.com (repeatable).
    #[arg(long, value_name = "ORIGIN", requires = "collect")]
    pub collect_origin: Vec<String>,

    /// A host name the collector answers besides loopback names and IP addresses, e.g.
    /// collector.example.com (repeatable; a guard against DNS rebinding).
    #[arg(long, value_name = "HOST", requires = "collect")]
    pub collect_host: Vec<String>,

    /// Remove collected runs that arrived more than this many days ago, at startup and
    /// hourly (0 keeps them).
    #[arg(long, value_name = "DAYS", default_value_t = 30, requires = "collect")]
    pub collect_retention_days: u32,

    /// POST /collect requests per second per client address, after the burst.
    #[arg(
        long,
        value_name = "PER_S",
        default_value_t = 10.0,
        requires = "collect"
    )]
    pub collect_rate: f64,

    /// POST /collect requests a client may send at once before the rate applies.
    #[arg(long, value_name = "N", default_value_t = 60, requires = "collect")]
    pub collect_burst: u32,

    /// The collector's file may grow to this many MiB; past it, posts are refused with
    /// 507 and counted (GET /field/health) until retention removes runs.
    #[arg(long, value_name = "MB", requires = "collect",
          value_parser = clap::value_parser!(u64).range(1..=16_777_216))]
    pub collect_max_mb: Option<u64>,

    /// A file holding the token /field/… reads must send (`Authorization: Bearer
    /// TOKEN`), at least 16 bytes. Needed when --addr is not a loopback address or
    /// --collect-host is given; without it reads are open on loopback only.
    #[arg(long, value_name = "PATH", requires = "collect")]
    pub collect_read_token_file: Option<PathBuf>,

    /// The read token itself (shown by `ps`: prefer --collect-read-token-file).
    #[arg(long, value_name = "TOKEN", requires = "collect",
          conflicts_with = "collect_read_token_file",
          value_parser = |s: &str| Ok::<_, String>(Secret(s.to_owned())))]
    pub collect_read_token: Option<Secret>,

    /// Export every stored run over OTLP/HTTP (metrics and a span per run) to this base
    /// URL; `/v1/metrics` and `/v1/traces` are appended (docs/field.md, "OTLP export").
    /// Without it, OTEL_EXPORTER_OTLP_ENDPOINT (or both signals' own variables) turns
    /// export on.
    #[arg(long, value_name = "URL", requires = "collect")]
    pub otlp_endpoint: Option<String>,

    /// A header sent with each export request, KEY=VALUE (repeatable), e.g. a vendor's
    /// API key: a secret, never logged or printed. Added to OTEL_EXPORTER_OTLP_HEADERS.
    #[arg(long, value_name = "KEY=VALUE", requires = "collect",
          value_parser = |s: &str| Ok::<_, String>(Secret(s.to_owned())))]
    pub otlp_header: Vec<Secret>,

    /// http/protobuf (default) or http/json; else OTEL_EXPORTER_OTLP_PROTOCOL.
    #[arg(long, value_name = "PROTOCOL", requires = "collect")]
    pub otlp_protocol: Option<String>,

    /// The resource's service.name (default: OTEL_SERVICE_NAME, else `ttfx`).
    #[arg(long, value_name = "NAME", requires = "collect")]
    pub otlp_service_name: Option<String>,

    /// Runs waiting for export at most; past it the oldest are dropped from the backlog
    /// (not from the database) and counted (GET /field/health, `ttfx field --health`).
    #[arg(long, value_name = "N", requires = "collect",
          default_value_t = ttfx_collect::export::DEFAULT_MAX_BACKLOG,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub otlp_max_backlog: u64,
}

impl ServeArgs {
    /// Where the collector's read token comes from, if given.
    pub fn read_token(&self) -> Option<TokenSource> {
        match (&self.collect_read_token_file, &self.collect_read_token) {
            (Some(path), _) => Some(TokenSource::File(path.clone())),
            (None, Some(token)) => Some(TokenSource::Arg(token.clone())),
            (None, None) => None,
        }
    }
}
