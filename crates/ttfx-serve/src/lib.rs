//! `ttfx serve`: the lab page, the simulated endpoints, the vantage proxy, the record
//! API and (with `--collect`) the field collector, on one port.
//!
//! This crate only wires: it reads the config file, makes the one record store the
//! simulator and the proxy share, mounts their routers, the collector's and the lab
//! page's files, and listens. What each route does lives in its own crate (ttfx-sim,
//! ttfx-proxy, ttfx-collect, ttfx-records, ttfx-edge; ttfx-otlp for the collector's
//! export, configured here from the flags); none of them depends on this one,
//! and it must not depend on the runner (which serves its page with this crate).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use tower_http::services::{ServeDir, ServeFile};

use ttfx_collect::CollectorError;
use ttfx_collect::read_access::ReadAccess;
use ttfx_edge::access::{BadToken, PROXY_TOKEN, ProxyToken};
use ttfx_edge::error::json_error;
use ttfx_edge::random::NoRandomness;
use ttfx_edge::{arrival, inflight, isolation};
use ttfx_proxy::ProxyState;
use ttfx_records::Records;
use ttfx_sim::SimState;

mod args;
pub mod config;
pub mod connections;

pub use args::ServeArgs;
pub use config::ConfigError;

/// Why `ttfx serve` did not start or stopped. Each text carries its cause (no `source`
/// chain, so a `{:#}` print says it once).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Collector(#[from] CollectorError),
    #[error(transparent)]
    Otlp(#[from] ttfx_otlp::ConfigError),
    #[error("--dist {}: no index.html there (build the lab page with `cargo xtask lab`)", dist.display())]
    NoLabPage { dist: PathBuf },
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot listen on {addr}: {cause}{}", listen_hint(cause))]
    Listen {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    #[error("cannot read the bound address: {0}")]
    BoundAddress(std::io::Error),
    #[error("server stopped: {0}")]
    Stopped(std::io::Error),
    #[error("--proxy-token-file {}: cannot read: {cause}", path.display())]
    TokenFile {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("--proxy-token-file {}: {problem}", path.display())]
    BadToken { path: PathBuf, problem: BadToken },
    #[error("cannot make the proxy token: {0}")]
    NoToken(NoRandomness),
}

/// The OTLP export's settings from the flags over the environment; None: off.
fn otlp_settings(
    args: &ServeArgs,
) -> Result<Option<ttfx_collect::export::ExportSettings>, ServeError> {
    let flags = ttfx_otlp::Flags {
        endpoint: args.otlp_endpoint.clone(),
        headers: args.otlp_header.iter().map(|s| s.0.clone()).collect(),
        protocol: args.otlp_protocol.clone(),
        service_name: args.otlp_service_name.clone(),
    };
    let Some(config) = ttfx_otlp::Config::resolve(&flags, &|k| std::env::var(k).ok())? else {
        return Ok(None);
    };
    // Never silent: where the runs go (no userinfo, query or header).
    let (m, t) = (&config.metrics, &config.traces);
    let mut how = if m.protocol == t.protocol {
        m.protocol.as_str().to_owned()
    } else {
        format!(
            "metrics {}, traces {}",
            m.protocol.as_str(),
            t.protocol.as_str()
        )
    };
    if [m, t]
        .iter()
        .any(|s| s.compression == ttfx_otlp::config::Compression::Gzip)
    {
        how.push_str(", gzip");
    }
    eprintln!(
        "ttfx serve: exporting every stored run over OTLP ({how}) to {} and {}",
        ttfx_otlp::config::redact(&m.url),
        ttfx_otlp::config::redact(&t.url)
    );
    Ok(Some(ttfx_collect::export::ExportSettings {
        exporter: ttfx_otlp::Exporter::new(config)?,
        max_backlog: args.otlp_max_backlog,
    }))
}

/// What to do about a port that cannot be had.
fn listen_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => " (port taken: pick another with --addr)",
        std::io::ErrorKind::PermissionDenied => " (pick a port above 1024 with --addr)",
        _ => "",
    }
}

/// Runs the server until the process is stopped.
pub fn run(args: ServeArgs) -> Result<(), ServeError> {
    // Config first: a bad file is reported before anything listens.
    let mut config = match &args.config {
        Some(path) => config::load(path)?,
        None => config::Config::default(),
    };
    config.proxy_access.token = proxy_token(&args, &config)?;
    // The collector's database too: a corrupt or foreign file is refused before anything
    // listens.
    let collector = match &args.collect {
        Some(path) => Some(ttfx_collect::Collector::open(ttfx_collect::Settings {
            reads: ReadAccess::decide(args.addr, &args.collect_host, args.read_token().as_ref())
                .map_err(CollectorError::from)?,
            path: path.clone(),
            origins: args.collect_origin.clone(),
            hosts: args.collect_host.clone(),
            retention_days: args.collect_retention_days,
            rate_per_s: args.collect_rate,
            burst: args.collect_burst,
            max_mb: args.collect_max_mb,
            otlp: otlp_settings(&args)?,
        })?),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    runtime.block_on(serve(args, config, collector))
}

async fn serve(
    args: ServeArgs,
    config: config::Config,
    collector: Option<ttfx_collect::Collector>,
) -> Result<(), ServeError> {
    let app = router(args.dist.as_deref(), config, args.max_concurrent)?;
    // After the shared CORS layer, so the collector's routes get their own origin check
    // and CORS (crates/ttfx-collect/src/http.rs) instead of "any origin".
    let app = match collector {
        Some(c) => app.merge(ttfx_collect::http::router(c.start()?)),
        None => app.merge(ttfx_collect::http::disabled_router()),
    };
    let app = if args.cross_origin_isolated {
        isolation::isolate(app)
    } else {
        app
    };
    // Every route's request body, the collector's included: the timeout resets at each
    // frame, so a slow upload that keeps sending (a streamed transcription) goes on.
    let app = with_body_timeout(app, std::time::Duration::from_millis(args.body_timeout_ms));
    let listener = bind(args.addr).await?;
    let local = listener.local_addr().map_err(ServeError::BoundAddress)?;
    // Tests and scripts read this exact line to learn the chosen port.
    println!("ttfx serve: listening on http://{local}/");
    connections::serve(
        listener,
        app,
        connections::ConnectionLimits {
            max_connections: args.max_connections,
            head_timeout: std::time::Duration::from_millis(args.head_timeout_ms),
        },
    )
    .await
    .map_err(ServeError::Stopped)
}

/// The token `/proxy` requires: the one in `--proxy-token-file`, else, when the server
/// listens beyond loopback and an upstream holds a key, a fresh one, printed once on
/// stderr (its only appearance: no log line or response carries it). On loopback
/// without a file, none: only this machine can connect, and the Host and Origin rules
/// keep other sites' pages out.
fn proxy_token(
    args: &ServeArgs,
    config: &config::Config,
) -> Result<Option<ProxyToken>, ServeError> {
    if let Some(path) = &args.proxy_token_file {
        let text = std::fs::read_to_string(path).map_err(|cause| ServeError::TokenFile {
            path: path.clone(),
            cause,
        })?;
        let token = ProxyToken::given(&text).map_err(|problem| ServeError::BadToken {
            path: path.clone(),
            problem,
        })?;
        return Ok(Some(token));
    }
    let holds_keys = config.upstreams.0.iter().any(|u| u.key.is_some());
    if args.addr.ip().is_loopback() || !holds_keys {
        return Ok(None);
    }
    let token = ProxyToken::generate().map_err(ServeError::NoToken)?;
    eprintln!(
        "ttfx serve: listening beyond loopback with keys: every /proxy request must carry \
         the header {}: {} (shown once; pass --proxy-token-file to choose it)",
        PROXY_TOKEN,
        token.expose()
    );
    Ok(Some(token))
}

/// `app` with a request body that may go at most `timeout` without a byte (every route;
/// the timer restarts at each frame). `ttfx run`'s own page server uses it too.
pub fn with_body_timeout(app: Router, timeout: std::time::Duration) -> Router {
    app.layer(tower_http::timeout::RequestBodyTimeoutLayer::new(timeout))
}

/// Pending connections the kernel may queue (it caps this at `net.core.somaxconn`):
/// a page or a benchmark opening a thousand streams at once should not see refused or
/// retried connects, which tokio's default of 1024 allows.
const BACKLOG: u32 = 4096;

async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, ServeError> {
    let listen = || -> std::io::Result<tokio::net::TcpListener> {
        let socket = match addr {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(BACKLOG)
    };
    listen().map_err(|cause| ServeError::Listen { addr, cause })
}

/// The whole HTTP surface of `ttfx serve`; at most `max_concurrent` requests in flight
/// at `/sim` and `/proxy` ([`inflight`]).
pub fn router(
    dist: Option<&Path>,
    config: config::Config,
    max_concurrent: u32,
) -> Result<Router, ServeError> {
    let records = Arc::new(Records::default());
    let sim = Arc::new(SimState::new(config.profiles, records.clone()));
    let records_cors = records_cors(&config.proxy_access.allowed_origins);
    let proxy = Arc::new(ProxyState {
        upstreams: config.upstreams,
        access: config.proxy_access,
        records: records.clone(),
    });
    let limited = Router::new()
        .nest("/sim", ttfx_sim::router(sim))
        .nest("/proxy", ttfx_proxy::router(proxy))
        .route_layer(axum::middleware::from_fn_with_state(
            inflight::Limit::new(max_concurrent),
            inflight::limit,
        ));
    let records = Router::new()
        .route("/records/{request_id}", get(record))
        .with_state(records);
    let app = Router::new().merge(limited);
    let app = match dist {
        Some(dir) => {
            let index = dir.join("index.html");
            if !index.is_file() {
                return Err(ServeError::NoLabPage {
                    dist: dir.to_path_buf(),
                });
            }
            app.fallback_service(ServeDir::new(dir).fallback(ServeFile::new(index)))
        }
        None => app.route("/", get(no_lab_page)),
    };
    let app = app
        .layer(axum::middleware::from_fn(arrival::stamp))
        .layer(arrival::cors());
    // After the shared "any origin" CORS layer, with its own: records say which
    // upstreams were called, when and with what error, so only this server's own pages
    // and [proxy] allowed_origins may read them from a browser.
    Ok(app.merge(records.layer(records_cors)))
}

/// CORS for `GET /records/{id}`: the origins of `[proxy] allowed_origins` (a page on
/// one of them reads the records of the requests it sent); never `*`. The server's own
/// pages are same-origin and need none.
fn records_cors(allowed: &[String]) -> tower_http::cors::CorsLayer {
    let origins = allowed
        .iter()
        .filter_map(|o| axum::http::HeaderValue::from_str(o.trim_end_matches('/')).ok());
    tower_http::cors::CorsLayer::new()
        .allow_origin(tower_http::cors::AllowOrigin::list(origins))
        .allow_methods([axum::http::Method::GET])
}

async fn record(State(records): State<Arc<Records>>, UrlPath(id): UrlPath<String>) -> Response {
    match records.get(&id) {
        Some(r) => axum::Json(ttfx_records::to_json(&ttfx_records::lock(&r))).into_response(),
        None => json_error(
            StatusCode::NOT_FOUND,
            &serde_json::json!({ "error": { "message": format!(
                "no record for request id `{id}` (records are kept for the last {} requests, \
                 fewer when they hold more than {} MiB)",
                ttfx_records::MAX_RECORDS,
                ttfx_records::MAX_RECORD_BYTES >> 20
            ) } }),
        ),
    }
}

async fn no_lab_page() -> Html<&'static str> {
    Html(
        "<!doctype html><title>ttfx</title><p>ttfx serve is running without a lab page. \
         Build and serve it with <code>cargo xtask lab</code>, or pass <code>--dist</code>.</p>",
    )
}
