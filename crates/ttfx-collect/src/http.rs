//! The collector's routes: `POST /collect` and the `GET /field/…` queries, behind one
//! origin check (`serve::access::check_origin`: the server's own origin, requests
//! without an Origin such as curl's, and `--collect-origin`), with CORS for the allowed
//! origins and the preflight a JSON POST needs.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use axum::Router;
use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::json;

use super::db::Source;
use super::limits::{BODY_DEADLINE, MAX_BODY_BYTES};
use super::query::{self, Fail, Metric, Slice};
use super::{Shared, StoreError, ingest};
use ttfx_edge::access::{HostRule, OriginRule, check_host, check_origin};
use ttfx_edge::clock::unix_ms;
use ttfx_edge::error::json_error;

/// The collector's paths (also answered, with a 404 that says how to enable them, by a
/// server without `--collect`).
pub const PATHS: [&str; 9] = [
    "/collect",
    "/field/health",
    "/field/benchmarks",
    "/field/gap",
    "/field/summary",
    "/field/series",
    "/field/histogram",
    "/field/slowest",
    "/field/dimensions",
];

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/collect", post(collect))
        .route("/field/summary", get(summary))
        .route("/field/series", get(series))
        .route("/field/histogram", get(histogram))
        .route("/field/slowest", get(slowest))
        .route("/field/dimensions", get(dimensions))
        .route("/field/benchmarks", get(benchmarks))
        .route("/field/gap", get(gap))
        .route("/field/health", get(health))
        .layer(axum::middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// The same paths on a server without a collector: a 404 saying so.
pub fn disabled_router() -> Router {
    PATHS.iter().fold(Router::new(), |r, path| {
        r.route(
            path,
            axum::routing::any(|| async {
                error(
                    StatusCode::NOT_FOUND,
                    "this ttfx serve has no collector: start it with --collect FILE.db",
                )
            }),
        )
    })
}

fn error(status: StatusCode, message: &str) -> Response {
    json_error(
        status,
        &json!({ "error": { "message": message, "type": "ttfx_collect_error" } }),
    )
}

fn fail(f: &Fail) -> Response {
    match f {
        Fail::Input(m) => error(StatusCode::BAD_REQUEST, m),
        Fail::Db(_) => error(StatusCode::INTERNAL_SERVER_ERROR, &f.to_string()),
    }
}

/// Origin check for every collector request, the preflight, and CORS headers for an
/// allowed cross-origin caller.
async fn guard(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let hosts = HostRule {
        allowed: &shared.settings.hosts,
        any_ip: true,
        list: "--collect-host",
    };
    let rule = OriginRule {
        allowed: &shared.settings.origins,
        action: "use this collector",
        list: "--collect-origin",
    };
    let checked =
        check_host(headers, &hosts).and_then(|host| check_origin(headers, Some(host), &rule));
    if let Err(why) = checked {
        return error(StatusCode::FORBIDDEN, &why.to_string());
    }
    let origin = headers.get(header::ORIGIN).cloned();
    // Reads hold users' runs: off loopback they need the read token (read_access.rs).
    // A preflight carries no credentials and is answered as before.
    let is_read = req.uri().path().starts_with("/field/");
    if is_read && req.method() != Method::OPTIONS && !shared.settings.reads.allows(headers) {
        let mut res = error(
            StatusCode::UNAUTHORIZED,
            "reading /field/… needs this collector's read token: send `Authorization: \
             Bearer TOKEN` (docs/field.md, \"Who may post and read\")",
        );
        res.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"ttfx-collect\""),
        );
        return with_cors(res, origin, false);
    }
    let res = if req.method() == Method::OPTIONS {
        preflight()
    } else {
        next.run(req).await
    };
    with_cors(res, origin, !is_read)
}

/// The CORS headers for an allowed origin. `Access-Control-Allow-Credentials` only on
/// writes: `navigator.sendBeacon` always sends credentials, and without it the browser
/// fails the preflight of a JSON beacon from an allowed origin and never sends the body
/// (the collector reads no cookie). Reads never carry it: a page may read only with the
/// token in its own request, never with what the browser attaches (#30).
fn with_cors(mut res: Response, origin: Option<HeaderValue>, credentials: bool) -> Response {
    let h = res.headers_mut();
    h.insert(header::VARY, HeaderValue::from_static("origin"));
    if let Some(origin) = origin {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        if credentials {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("retry-after"),
        );
    }
    res
}

fn preflight() -> Response {
    (
        StatusCode::NO_CONTENT,
        [
            (
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("POST, GET, OPTIONS"),
            ),
            (
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static("content-type, authorization"),
            ),
            (
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static("86400"),
            ),
        ],
    )
        .into_response()
}

fn client_ip(req: &Request) -> IpAddr {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip())
}

fn too_large() -> Response {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!(
            "body larger than the collector's limit of {MAX_BODY_BYTES} bytes (1 MiB): post \
             fewer reports per request"
        ),
    )
}

/// `POST /collect?source=lab`: the body's runs were measured by the lab page, not by a
/// production page. Only this server's own origin (the lab page `ttfx serve --dist`
/// serves) or a client without an Origin (curl) may say so: a production page that
/// `--collect-origin` lets beacon is refused, so its runs can never be stored as lab
/// runs and drop out of `source=field`. A lab page cannot claim `field` either: the
/// parameter takes only `lab` (field and run follow from each document's kind).
fn source_of(req: &Request) -> Result<Option<Source>, (StatusCode, String)> {
    let Query(params) = Query::<Vec<(String, String)>>::try_from_uri(req.uri())
        .map_err(|e| (StatusCode::BAD_REQUEST, e.body_text()))?;
    let mut source = None;
    for (key, value) in params {
        match (key.as_str(), value.as_str()) {
            ("source", "lab") => source = Some(Source::Lab),
            ("source", other) => {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!(
                        "source={other}: only `lab` may be given (field and run follow from \
                         each document's kind)"
                    ),
                ));
            }
            (other, _) => {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("unknown parameter `{other}` (POST /collect takes source=lab)"),
                ));
            }
        }
    }
    if source.is_some() {
        let headers = req.headers();
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let own_only = OriginRule {
            allowed: &[],
            action: "store runs as source=lab",
            list: "no other origin: a page's beacons are field runs",
        };
        check_origin(headers, host, &own_only)
            .map_err(|why| (StatusCode::FORBIDDEN, why.to_string()))?;
    }
    Ok(source)
}

async fn collect(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let received = unix_ms(SystemTime::now());
    let source = match source_of(&req) {
        Ok(source) => source,
        Err((status, why)) => return error(status, &why),
    };
    let ip = client_ip(&req);
    if let Err(wait) = shared.buckets.take(ip, Instant::now()) {
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        let s = &shared.settings;
        let mut res = error(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "too many requests from {ip}: {} at once, then {}/s; retry after {seconds} s",
                s.burst, s.rate_per_s
            ),
        );
        if let Ok(v) = HeaderValue::from_str(&seconds.to_string()) {
            res.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return res;
    }
    if declared_length(req.headers()).is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return too_large();
    }
    let read = Limited::new(req.into_body(), MAX_BODY_BYTES).collect();
    let Ok(read) = tokio::time::timeout(BODY_DEADLINE, read).await else {
        return error(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the body did not arrive whole within {} s (the collector's limit)",
                BODY_DEADLINE.as_secs()
            ),
        );
    };
    let bytes = match read {
        Ok(body) => body.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => return too_large(),
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the body: {e}"),
            );
        }
    };
    let parsed = tokio::task::spawn_blocking(move || {
        let text = std::str::from_utf8(&bytes).map_err(|e| ingest::Refusal {
            item: None,
            message: format!("the body is not UTF-8: {e}"),
        })?;
        ingest::parse(text, received)
    })
    .await;
    let mut rows = match parsed {
        Ok(Ok(rows)) => rows,
        Ok(Err(refusal)) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &json!({ "error": {
                    "message": refusal.message,
                    "type": "ttfx_collect_error",
                    "item": refusal.item,
                } }),
            );
        }
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    if let Some(source) = source {
        for row in &mut rows {
            row.source = source;
        }
    }
    match shared.store(rows).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e @ StoreError::Closed) => error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
        Err(e @ StoreError::Full(_)) => error(StatusCode::INSUFFICIENT_STORAGE, &e.to_string()),
        Err(e @ StoreError::Db(_)) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// A query string: the endpoint's own parameters, the rest filters by dimension.
struct Params(Vec<(String, String)>);

impl Params {
    fn take(&mut self, key: &str) -> Result<Option<String>, Fail> {
        let mut found = None;
        let mut i = 0;
        while i < self.0.len() {
            if self.0[i].0 == key {
                let (_, v) = self.0.remove(i);
                if found.replace(v).is_some() {
                    return Err(Fail::Input(format!("`{key}` given twice")));
                }
            } else {
                i += 1;
            }
        }
        Ok(found)
    }

    fn metric(&mut self) -> Result<Metric, Fail> {
        match self.take("metric")? {
            Some(m) => Metric::parse(&m),
            None => {
                let names: Vec<String> = Metric::all().iter().map(Metric::name).collect();
                Err(Fail::Input(format!(
                    "metric is required (choices: {})",
                    names.join(", ")
                )))
            }
        }
    }

    fn by(&mut self) -> Result<Option<query::Dimension>, Fail> {
        self.take("by")?.map(|d| query::dimension(&d)).transpose()
    }

    fn number(&mut self, key: &str, default: usize) -> Result<usize, Fail> {
        match self.take(key)? {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| Fail::Input(format!("{key}={v}: expected a whole number"))),
        }
    }

    /// The slice: `since` and the remaining parameters, each a dimension to filter by.
    fn slice(mut self, own: &str, now: f64) -> Result<Slice, Fail> {
        let since = self.take("since")?;
        for (name, _) in &self.0 {
            if query::dimension(name).is_err() {
                let dims: Vec<&str> = super::db::DIMENSIONS.iter().map(|d| d.name).collect();
                return Err(Fail::Input(format!(
                    "unknown parameter `{name}` (this endpoint takes {own}since, and a \
                     dimension to filter by: {})",
                    dims.join(", ")
                )));
            }
        }
        Slice::new(since.as_deref(), &self.0, now)
    }
}

type Q = Query<Vec<(String, String)>>;

async fn answer(
    shared: &Shared,
    parsed: Result<impl FnOnce(&rusqlite::Connection) -> query::Answer + Send + 'static, Fail>,
) -> Response {
    let run = match parsed {
        Ok(run) => run,
        Err(f) => return fail(&f),
    };
    match shared.read(run).await {
        Ok(doc) => axum::Json(doc).into_response(),
        Err(f) => fail(&f),
    }
}

async fn summary(State(shared): State<Arc<Shared>>, Query(q): Q) -> Response {
    let now = unix_ms(SystemTime::now());
    let parsed = (|| -> Result<_, Fail> {
        let mut p = Params(q);
        let metric = p.take("metric")?.map(|m| Metric::parse(&m)).transpose()?;
        let by = p.by()?;
        let slice = p.slice("metric, by, ", now)?;
        let helper = shared.helper();
        Ok(move |c: &rusqlite::Connection| {
            query::summary_with(c, Some(&helper), metric, by, &slice)
        })
    })();
    answer(&shared, parsed).await
}

async fn series(State(shared): State<Arc<Shared>>, Query(q): Q) -> Response {
    let now = unix_ms(SystemTime::now());
    let parsed = (|| -> Result<_, Fail> {
        let mut p = Params(q);
        let metric = p.metric()?;
        let bucket = p.take("bucket")?.unwrap_or_else(|| "1h".to_owned());
        let by = p.by()?;
        let slice = p.slice("metric, bucket, by, ", now)?;
        Ok(move |c: &rusqlite::Connection| query::series(c, metric, &bucket, by, &slice, now))
    })();
    answer(&shared, parsed).await
}

async fn histogram(State(shared): State<Arc<Shared>>, Query(q): Q) -> Response {
    let now = unix_ms(SystemTime::now());
    let parsed = (|| -> Result<_, Fail> {
        let mut p = Params(q);
        let metric = p.metric()?;
        let bins = p.number("bins", query::DEFAULT_BINS)?;
        let by = p.by()?;
        let slice = p.slice("metric, bins, by, ", now)?;
        Ok(move |c: &rusqlite::Connection| query::histogram(c, metric, bins, by, &slice))
    })();
    answer(&shared, parsed).await
}

async fn slowest(State(shared): State<Arc<Shared>>, Query(q): Q) -> Response {
    let now = unix_ms(SystemTime::now());
    let parsed = (|| -> Result<_, Fail> {
        let mut p = Params(q);
        let metric = p.metric()?;
        let limit = p.number("limit", query::DEFAULT_LIMIT)?;
        let offset = p.number("offset", 0)?;
        let slice = p.slice("metric, limit, offset, ", now)?;
        Ok(move |c: &rusqlite::Connection| query::slowest(c, metric, limit, offset, &slice))
    })();
    answer(&shared, parsed).await
}

/// The store's own state: runs, the file's size against its cap, posts refused full,
/// and the OTLP export's (exported, pending, dropped, refused, rejected, last error).
async fn health(State(shared): State<Arc<Shared>>) -> Response {
    let refused_full = shared
        .refused_full
        .load(std::sync::atomic::Ordering::Relaxed);
    let max_bytes = shared.settings.max_mb.map(|mb| mb * 1024 * 1024);
    let exporting = shared.exporting();
    let parsed: Result<_, Fail> = Ok(move |c: &rusqlite::Connection| {
        let runs: i64 = c.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))?;
        let bytes = super::db::file_bytes(c).map_err(|e| Fail::Db(e.to_string()))?;
        let mut otlp = super::outbox::health(c)?;
        otlp["enabled"] = json!(exporting);
        Ok(json!({
            "runs": runs,
            "file_bytes": bytes,
            "max_bytes": max_bytes,
            "refused_full": refused_full,
            "otlp": otlp,
        }))
    });
    answer(&shared, parsed).await
}

async fn dimensions(State(shared): State<Arc<Shared>>, Query(q): Q) -> Response {
    let now = unix_ms(SystemTime::now());
    let parsed = Params(q)
        .slice("", now)
        .map(|slice| move |c: &rusqlite::Connection| query::dimensions(c, &slice));
    answer(&shared, parsed).await
}

async fn benchmarks(State(shared): State<Arc<Shared>>, Query(q): Q) -> Response {
    let parsed = if let Some((k, _)) = q.first() {
        Err(Fail::Input(format!(
            "unknown parameter `{k}` (this endpoint takes none)"
        )))
    } else {
        Ok(super::bench_store::list_json)
    };
    answer(&shared, parsed).await
}

/// `bench` (a name, an id or `latest`; default `latest`), `metric` (a benchmark metric
/// or a field metric: only its rows), `since` and dimension filters.
async fn gap(State(shared): State<Arc<Shared>>, Query(q): Q) -> Response {
    let now = unix_ms(SystemTime::now());
    let parsed = (|| -> Result<_, Fail> {
        let mut p = Params(q);
        let which = p.take("bench")?.unwrap_or_else(|| "latest".to_owned());
        let pairs = super::gap::pairs_for(p.take("metric")?.as_deref())?;
        let slice = p.slice("bench, metric, ", now)?;
        Ok(move |c: &rusqlite::Connection| {
            let bench = super::bench_store::select(c, &which)?;
            super::gap::gap(c, &bench, &pairs, &slice)
        })
    })();
    answer(&shared, parsed).await
}
