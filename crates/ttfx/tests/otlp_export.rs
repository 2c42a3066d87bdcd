//! OTLP export as a real peer sees it: `ttfx serve --collect FILE.db --otlp-endpoint URL`
//! (and `ttfx field --export-otlp`) against a receiver on loopback that decodes every
//! body with the official OTLP definitions (opentelemetry-proto's prost types, or its
//! OTLP/JSON mapping) and answers as a script says (503s, Retry-After, 400).

// Test code: a failure here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use common::ttfx;
use prost::Message;
use serde_json::{Value, json};
use ttfx_e2e::ServeProcess;
use ttfx_otlp::proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use ttfx_otlp::proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use ttfx_otlp::proto::tonic::common::v1::any_value;
use ttfx_otlp::proto::tonic::metrics::v1::metric;
use ttfx_otlp::proto::tonic::trace::v1::Span;

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

/// A field report: one completed run whose first token came at `ttft` ms.
fn field(label: &str, ttft: f64, start_unix_ms: f64) -> Value {
    json!({
        "schema_version": 1,
        "kind": "field",
        "generator": "ttfx-probe test",
        "run": {
            "id": format!("{label}-{ttft}"),
            "label": label,
            "target": "https://api.openai.com/v1/chat/completions",
            "page_path": "/chat",
            "engine": "chromium",
            "outcome": "completed",
            "paint_method": "element_timing",
            "hidden": false,
            "sample_rate": 1.0,
            "request_start_unix_ms": start_unix_ms,
            "dialect": "openai-chat",
            "milestones": {
                "request_start": 0.0,
                "headers": ttft / 2.0,
                "first_token": ttft,
                "first_visible_token": ttft,
                "first_paint": ttft + 16.5,
                "done": ttft + 50.0
            },
            "metrics": {"ttft_ms": ttft, "ttft_visible_ms": ttft, "e2e_ms": ttft + 50.0,
                        "output_tokens": 3.0},
            "gaps": {"first_token": 12.5},
            "chunks": {"count": 3, "bytes": 300, "visible_tokens": 3, "reasoning_tokens": 0,
                       "bins": []}
        }
    })
}

/// One request the receiver got, and what it answered.
#[derive(Clone)]
struct Got {
    path: String,
    at: Instant,
    headers: HeaderMap,
    body: Bytes,
    answered: u16,
}

#[derive(Default)]
struct Script {
    /// Per path (`/v1/metrics`), the answers to give first (status, Retry-After);
    /// then `then`.
    first: HashMap<String, VecDeque<(u16, Option<&'static str>)>>,
    then: u16,
    got: Vec<Got>,
}

#[derive(Clone)]
struct Receiver {
    url: String,
    script: Arc<Mutex<Script>>,
}

async fn receive(
    State(script): State<Arc<Mutex<Script>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let mut s = script.lock().unwrap();
    let path = uri.path().to_owned();
    let (status, retry_after) = s
        .first
        .get_mut(&path)
        .and_then(|q| q.pop_front())
        .unwrap_or((s.then, None));
    s.got.push(Got {
        path,
        at: Instant::now(),
        headers,
        body,
        answered: status,
    });
    let mut response = StatusCode::from_u16(status).unwrap().into_response();
    if let Some(after) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", after.parse().unwrap());
    }
    response
}

/// A CA made for one test, the receiver's certificate (127.0.0.1) and a client's, each
/// signed by it; PEM files of the CA and the client's pair in `dir`.
struct Pki {
    _dir: tempfile::TempDir,
    ca: tokio_rustls::rustls::pki_types::CertificateDer<'static>,
    server: tokio_rustls::rustls::pki_types::CertificateDer<'static>,
    server_key: tokio_rustls::rustls::pki_types::PrivateKeyDer<'static>,
    ca_file: String,
    client_file: String,
    client_key_file: String,
}

impl Pki {
    fn new() -> Pki {
        use rcgen::ExtendedKeyUsagePurpose::{ClientAuth, ServerAuth};
        use rcgen::KeyUsagePurpose::{CrlSign, DigitalSignature, KeyCertSign};
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "ttfx OTLP receiver test CA");
        ca.key_usages = vec![KeyCertSign, CrlSign, DigitalSignature];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let leaf = |name: &str, usage| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(vec![name.to_owned()]).unwrap();
            params.extended_key_usages = vec![usage];
            (params.signed_by(&key, &ca).unwrap(), key)
        };
        let (server, server_key) = leaf("127.0.0.1", ServerAuth);
        let (client, client_key) = leaf("ttfx-exporter", ClientAuth);
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path.to_str().unwrap().to_owned()
        };
        Pki {
            ca_file: write("ca.pem", ca.pem()),
            client_file: write("client.pem", client.pem()),
            client_key_file: write("client-key.pem", client_key.serialize_pem()),
            ca: ca.der().clone(),
            server: server.der().clone(),
            server_key: tokio_rustls::rustls::pki_types::PrivatePkcs8KeyDer::from(
                server_key.serialize_der(),
            )
            .into(),
            _dir: dir,
        }
    }
}

/// The body as sent, gunzipped when it came with `Content-Encoding: gzip`.
fn unzipped(g: &Got) -> Vec<u8> {
    if g.headers
        .get("content-encoding")
        .is_some_and(|v| v == "gzip")
    {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&g.body[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    } else {
        g.body.to_vec()
    }
}

/// A script answering `then` to everything not scripted, and the routes that follow it.
fn scripted(then: u16) -> (Arc<Mutex<Script>>, axum::Router) {
    let script = Arc::new(Mutex::new(Script {
        then,
        ..Script::default()
    }));
    let app = axum::Router::new()
        .fallback(receive)
        .with_state(script.clone());
    (script, app)
}

impl Receiver {
    /// A receiver over TLS with `pki`'s certificate that accepts only clients with a
    /// certificate `pki`'s CA signed, answering `then` to everything.
    async fn start_tls(then: u16, pki: &Pki) -> Receiver {
        use hyper_util::rt::TokioIo;
        use hyper_util::service::TowerToHyperService;
        use tokio_rustls::rustls;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(pki.ca.clone()).unwrap();
        let clients = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(clients)
            .with_single_cert(vec![pki.server.clone()], pki.server_key.clone_key())
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let (script, app) = scripted(then);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    // A client without the CA's trust or a certificate ends here.
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), TowerToHyperService::new(app))
                        .await;
                });
            }
        });
        Receiver { url, script }
    }

    /// A receiver answering `then` to everything not scripted.
    async fn start(then: u16) -> Receiver {
        let (script, app) = scripted(then);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { url, script }
    }

    fn first(&self, path: &str, answers: &[(u16, Option<&'static str>)]) {
        self.script
            .lock()
            .unwrap()
            .first
            .insert(path.to_owned(), answers.iter().copied().collect());
    }

    fn then(&self, status: u16) {
        self.script.lock().unwrap().then = status;
    }

    fn got(&self, path: &str) -> Vec<Got> {
        let s = self.script.lock().unwrap();
        s.got.iter().filter(|g| g.path == path).cloned().collect()
    }

    /// Every span of the trace requests it accepted (2xx), decoded as protobuf.
    fn spans(&self) -> Vec<Span> {
        self.got("/v1/traces")
            .iter()
            .filter(|g| g.answered == 200)
            .flat_map(|g| {
                let req = ExportTraceServiceRequest::decode(g.body.clone()).unwrap();
                req.resource_spans
                    .into_iter()
                    .flat_map(|r| r.scope_spans)
                    .flat_map(|s| s.spans)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn metrics(&self) -> Vec<ExportMetricsServiceRequest> {
        self.got("/v1/metrics")
            .iter()
            .filter(|g| g.answered == 200)
            .map(|g| ExportMetricsServiceRequest::decode(g.body.clone()).unwrap())
            .collect()
    }

    /// Waits until `done` holds, or fails after `secs`.
    async fn wait_for(&self, secs: u64, what: &str, done: impl Fn(&Receiver) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !done(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

struct Db {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Db {
    fn new() -> Db {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("field.db");
        Db { _dir: dir, path }
    }

    fn serve(&self, receiver: &Receiver, extra: &[&str]) -> ServeProcess {
        let db = self.path.to_str().unwrap();
        let mut args = vec!["--collect", db, "--otlp-endpoint", &receiver.url];
        args.extend(extra);
        ServeProcess::start(ttfx(), &args).unwrap()
    }

    /// `ttfx field FILE.db --health --json`.
    fn health(&self) -> Value {
        let out = Command::new(ttfx())
            .arg("field")
            .arg(&self.path)
            .args(["--health", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

async fn post(server: &ServeProcess, body: String) {
    let r = reqwest::Client::new()
        .post(format!("{}collect", server.url))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204, "{}", r.text().await.unwrap());
}

fn span_ids(spans: &[Span]) -> Vec<Vec<u8>> {
    let mut ids: Vec<Vec<u8>> = spans.iter().map(|s| s.span_id.clone()).collect();
    ids.sort();
    ids
}

fn text_attr<'a>(
    attrs: &'a [ttfx_otlp::proto::tonic::common::v1::KeyValue],
    key: &str,
) -> Option<&'a str> {
    attrs.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some(s.as_str()),
            _ => None,
        }
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn after_two_503s_every_run_arrives_once_with_its_exact_values_and_names() {
    let receiver = Receiver::start(200).await;
    receiver.first("/v1/metrics", &[(503, None), (503, None)]);
    receiver.first("/v1/traces", &[(503, None), (503, None)]);
    let db = Db::new();
    let server = db.serve(&receiver, &[]);
    let start = now_ms() - 1000.0;
    let ttfts = [412.25, 97.5, 1234.125];
    let body: Vec<Value> = ttfts
        .iter()
        .enumerate()
        .map(|(i, t)| field(&format!("l{i}"), *t, start))
        .collect();
    post(&server, Value::Array(body).to_string()).await;
    receiver
        .wait_for(20, "3 spans", |r| r.spans().len() >= 3)
        .await;
    // Let a wrong duplicate show itself.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let spans = receiver.spans();
    assert_eq!(spans.len(), 3, "each run exactly once");
    let mut ids = span_ids(&spans);
    ids.dedup();
    assert_eq!(ids.len(), 3);
    // 2 refused + 1 accepted per signal.
    assert_eq!(receiver.got("/v1/metrics").len(), 3);
    assert_eq!(receiver.got("/v1/traces").len(), 3);

    // A span per run: client kind, milestones as events at the run's own time.
    let span = spans
        .iter()
        .find(|s| text_attr(&s.attributes, "ttfx.label") == Some("l0"))
        .unwrap();
    assert_eq!(span.kind, 3, "SPAN_KIND_CLIENT");
    assert_eq!(span.name, "chat");
    let start_ns = (start * 1e3).round() as u64 * 1000;
    assert!(span.start_time_unix_nano.abs_diff(start_ns) <= 1000);
    let first_token = span
        .events
        .iter()
        .find(|e| e.name == "first_token")
        .unwrap();
    assert_eq!(
        first_token.time_unix_nano - span.start_time_unix_nano,
        412_250_000
    );
    assert_eq!(
        text_attr(&span.attributes, "gen_ai.provider.name"),
        Some("openai")
    );
    assert_eq!(
        text_attr(&span.attributes, "server.address"),
        Some("api.openai.com")
    );

    // Metrics: the conventions' names and units, one point per run, the stored value.
    let metrics = receiver.metrics();
    assert_eq!(metrics.len(), 1);
    let rm = &metrics[0].resource_metrics[0];
    assert_eq!(
        text_attr(&rm.resource.as_ref().unwrap().attributes, "service.name"),
        Some("ttfx")
    );
    let scope = &rm.scope_metrics[0];
    assert_eq!(scope.schema_url, "https://opentelemetry.io/schemas/1.41.0");
    let by_name: HashMap<&str, &ttfx_otlp::proto::tonic::metrics::v1::Metric> =
        scope.metrics.iter().map(|m| (m.name.as_str(), m)).collect();
    let ttfc = by_name["gen_ai.client.operation.time_to_first_chunk"];
    assert_eq!(ttfc.unit, "s");
    let Some(metric::Data::Histogram(h)) = &ttfc.data else {
        panic!("not a histogram")
    };
    assert_eq!(h.aggregation_temporality, 1, "delta");
    let mut sums: Vec<f64> = h.data_points.iter().map(|p| p.sum.unwrap()).collect();
    sums.sort_by(f64::total_cmp);
    let mut want: Vec<f64> = ttfts.iter().map(|t| t / 1000.0).collect();
    want.sort_by(f64::total_cmp);
    assert_eq!(sums, want, "exactly the stored ms / 1000");
    for p in &h.data_points {
        assert_eq!((p.count, p.min, p.max), (1, p.sum, p.sum));
        assert_eq!(
            text_attr(&p.attributes, "gen_ai.operation.name"),
            Some("chat")
        );
        assert_eq!(p.bucket_counts.iter().sum::<u64>(), 1);
    }
    for name in [
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "ttfx.client.time_to_first_visible_token",
        "ttfx.client.time_to_first_paint",
        "ttfx.client.server_gap",
    ] {
        assert!(by_name.contains_key(name), "{name}");
    }
    assert_eq!(by_name["gen_ai.client.token.usage"].unit, "{token}");

    let (_, health) = {
        let r = reqwest::get(format!("{}field/health", server.url))
            .await
            .unwrap();
        (r.status(), r.json::<Value>().await.unwrap())
    };
    assert_eq!(health["otlp"]["exported"], 3, "{health}");
    assert_eq!(health["otlp"]["pending"], 0, "{health}");
    assert_eq!(health["otlp"]["enabled"], true, "{health}");
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_after_is_waited_for() {
    let receiver = Receiver::start(200).await;
    receiver.first("/v1/metrics", &[(429, Some("2"))]);
    let db = Db::new();
    let server = db.serve(&receiver, &[]);
    post(&server, field("a", 100.0, now_ms()).to_string()).await;
    receiver
        .wait_for(20, "the span", |r| r.spans().len() == 1)
        .await;
    let got = receiver.got("/v1/metrics");
    assert_eq!(got.len(), 2);
    let waited = got[1].at - got[0].at;
    // A sleep never ends early, so 2 s is a floor (the receiver's two clock readings
    // add microseconds, not milliseconds); the backoff alone would have waited at most
    // 0.5 s, so the floor tells the header was read. The ceiling allows a loaded CI.
    assert!(
        waited >= Duration::from_millis(1990) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_goes_on_where_the_export_stopped() {
    let receiver = Receiver::start(503).await;
    let db = Db::new();
    let server = db.serve(&receiver, &[]);
    let start = now_ms();
    post(&server, field("a", 100.0, start).to_string()).await;
    post(&server, field("b", 200.0, start).to_string()).await;
    receiver
        .wait_for(10, "a first attempt", |r| !r.got("/v1/metrics").is_empty())
        .await;
    // The failure is recorded by the writer after the 503 (not before the receiver
    // sees the request): wait for it, as an operator reading the health would.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let h: Value = reqwest::get(format!("{}field/health", server.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if !h["otlp"]["last_error"].is_null() {
            break;
        }
        assert!(Instant::now() < deadline, "{h}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(server); // SIGKILL: no goodbye, the outbox is all there is.
    let h = db.health();
    assert_eq!(h["otlp"]["pending"], 2, "{h}");
    assert_eq!(h["otlp"]["exported"], 0, "{h}");
    assert!(
        h["otlp"]["last_error"]
            .as_str()
            .unwrap_or("")
            .contains("503"),
        "{h}"
    );

    receiver.then(200);
    let server = db.serve(&receiver, &[]);
    post(&server, field("c", 300.0, start).to_string()).await;
    receiver
        .wait_for(20, "3 spans", |r| r.spans().len() >= 3)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let spans = receiver.spans();
    let mut labels: Vec<&str> = spans
        .iter()
        .map(|s| text_attr(&s.attributes, "ttfx.label").unwrap())
        .collect();
    labels.sort_unstable();
    assert_eq!(labels, ["a", "b", "c"], "each run once, across the restart");
    drop(server);
    let h = db.health();
    assert_eq!(
        (
            h["otlp"]["exported"].as_i64(),
            h["otlp"]["pending"].as_i64()
        ),
        (Some(3), Some(0))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_backlog_drops_the_oldest_and_counts_them() {
    let receiver = Receiver::start(503).await;
    let db = Db::new();
    let server = db.serve(&receiver, &["--otlp-max-backlog", "2"]);
    let start = now_ms();
    let body: Vec<Value> = (0..5)
        .map(|i| field("a", 100.0 + f64::from(i), start))
        .collect();
    post(&server, Value::Array(body).to_string()).await;
    let r = reqwest::get(format!("{}field/health", server.url))
        .await
        .unwrap();
    let health: Value = r.json().await.unwrap();
    assert_eq!(health["runs"], 5, "every run is stored: {health}");
    assert_eq!(health["otlp"]["pending"], 2, "{health}");
    assert_eq!(health["otlp"]["dropped"], 3, "{health}");
    drop(server);
    // Then the receiver recovers: the two left arrive, the newest ones.
    receiver.then(200);
    let server = db.serve(&receiver, &[]);
    receiver
        .wait_for(20, "2 spans", |r| r.spans().len() >= 2)
        .await;
    let mut ttft: Vec<String> = receiver
        .spans()
        .iter()
        .map(|s| text_attr(&s.attributes, "ttfx.run.id").unwrap().to_owned())
        .collect();
    ttft.sort();
    assert_eq!(ttft, ["a-103", "a-104"]);
    drop(server);
}

/// `ttfx serve` with its output kept whole (ServeProcess reads stdout for the URL only).
struct Logged {
    child: Child,
    url: String,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Logged {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Logged {
        let mut child = Command::new(ttfx())
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let out = child.stdout.take().unwrap();
        let keep = stdout.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("ttfx serve: listening on ") {
                    let _ = tx.send(url.to_owned());
                }
                keep.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let mut err = child.stderr.take().unwrap();
        let keep = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                keep.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let url = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        Logged {
            child,
            url,
            stdout,
            stderr,
        }
    }

    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The readers get the pipes' last bytes.
        std::thread::sleep(Duration::from_millis(100));
        let out = self.stdout.lock().unwrap().clone();
        let err = self.stderr.lock().unwrap().clone();
        format!("{out}{err}")
    }
}

/// A failed assertion must not leave the server running.
impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn headers_reach_the_receiver_never_the_logs_and_a_400_is_not_retried() {
    let receiver = Receiver::start(400).await;
    receiver.first("/v1/metrics", &[(503, None)]);
    let db = Db::new();
    let secret = "Bearer s3cr3t-0tlp-t0ken";
    let header = format!("authorization={secret}");
    let server = Logged::start(
        &[
            "--collect",
            db.path.to_str().unwrap(),
            "--otlp-endpoint",
            &receiver.url,
            "--otlp-header",
            &header,
            "--otlp-service-name",
            "chat-web",
        ],
        &[("OTEL_EXPORTER_OTLP_HEADERS", "x-team=ml%20platform")],
    );
    let r = reqwest::Client::new()
        .post(format!("{}collect", server.url))
        .body(json!([field("a", 1.0, now_ms()), field("b", 2.0, now_ms())]).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    receiver
        .wait_for(10, "the refusal", |r| r.got("/v1/metrics").len() >= 2)
        .await;
    // A refusal is final: nothing more comes, however long one waits (the backoff would
    // have tried again within 1 s).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let got = receiver.got("/v1/metrics");
    assert_eq!(got.len(), 2, "one 503 retried, then the 400 not");
    assert!(receiver.got("/v1/traces").is_empty());
    for g in &got {
        assert_eq!(g.headers["authorization"], secret);
        assert_eq!(g.headers["x-team"], "ml platform");
        assert_eq!(g.headers["content-type"], "application/x-protobuf");
    }
    let m = ExportMetricsServiceRequest::decode(got[0].body.clone()).unwrap();
    assert_eq!(
        text_attr(
            &m.resource_metrics[0].resource.as_ref().unwrap().attributes,
            "service.name"
        ),
        Some("chat-web")
    );
    let h = db.health();
    assert_eq!(h["otlp"]["refused"], 2, "{h}");
    assert_eq!(h["otlp"]["pending"], 0, "{h}");
    let logs = server.stop();
    assert!(!logs.contains("s3cr3t"), "{logs}");
    assert!(logs.contains("HTTP 400"), "{logs}");
    assert_eq!(logs.matches("refused the batch").count(), 1, "{logs}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_json_bodies_follow_the_otlp_json_mapping() {
    let receiver = Receiver::start(200).await;
    let db = Db::new();
    let server = db.serve(&receiver, &["--otlp-protocol", "http/json"]);
    post(&server, field("a", 250.5, now_ms()).to_string()).await;
    receiver
        .wait_for(20, "the span", |r| !r.got("/v1/traces").is_empty())
        .await;
    let t = &receiver.got("/v1/traces")[0];
    assert_eq!(t.headers["content-type"], "application/json");
    let doc: Value = serde_json::from_slice(&t.body).unwrap();
    let span = &doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    let trace_id = span["traceId"].as_str().unwrap();
    assert_eq!(trace_id.len(), 32);
    assert!(
        trace_id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert!(
        span["startTimeUnixNano"].is_string(),
        "int64 as a string: {span}"
    );
    assert_eq!(span["kind"], 3);
    // The official types read it back.
    let back: ExportTraceServiceRequest = serde_json::from_slice(&t.body).unwrap();
    assert_eq!(back.resource_spans[0].scope_spans[0].spans.len(), 1);
    let m = &receiver.got("/v1/metrics")[0];
    let doc: Value = serde_json::from_slice(&m.body).unwrap();
    let metrics = doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
        .as_array()
        .unwrap();
    let ttfc = metrics
        .iter()
        .find(|m| m["name"] == "gen_ai.client.operation.time_to_first_chunk")
        .unwrap();
    let point = &ttfc["histogram"]["dataPoints"][0];
    assert_eq!(point["count"], "1");
    assert_eq!(point["sum"], 0.2505);
    drop(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn field_export_otlp_backfills_the_stored_runs_and_since_limits_them() {
    let receiver = Receiver::start(200).await;
    let db = Db::new();
    // Stored with export off.
    let server = ServeProcess::start(ttfx(), &["--collect", db.path.to_str().unwrap()]).unwrap();
    let now = now_ms();
    let body = json!([
        field("old", 1.0, now - 3.0 * 86_400_000.0),
        field("new", 2.0, now),
        field("new", 3.0, now)
    ]);
    post(&server, body.to_string()).await;
    assert_eq!(
        db.health()["otlp"]["pending"],
        0,
        "export off: nothing queued"
    );
    let url = receiver.url.clone();
    let path = db.path.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(ttfx())
            .arg("field")
            .arg(&path)
            .args(["--export-otlp", &url, "--since", "1d"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("ttfx field: exported 2 run(s) to http://127.0.0.1:"),
        "{stdout}"
    );
    let spans = receiver.spans();
    assert_eq!(spans.len(), 2);
    assert!(
        spans
            .iter()
            .all(|s| text_attr(&s.attributes, "ttfx.label") == Some("new"))
    );
    drop(server);
}

#[test]
fn a_bad_otlp_flag_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    for (args, want) in [
        (vec!["--otlp-endpoint", "ftp://x"], "--otlp-endpoint"),
        (
            vec![
                "--otlp-endpoint",
                "http://127.0.0.1:9",
                "--otlp-protocol",
                "grpc",
            ],
            "--otlp-protocol grpc",
        ),
        (
            vec![
                "--otlp-endpoint",
                "http://127.0.0.1:9",
                "--otlp-header",
                "k v=s3cret",
            ],
            "--otlp-header",
        ),
    ] {
        let out = Command::new(ttfx())
            .args(["serve", "--addr", "127.0.0.1:0", "--collect"])
            .arg(&db)
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want) && !err.contains("s3cret"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_standard_environment_variables_configure_the_export() {
    let receiver = Receiver::start(200).await;
    let db = Db::new();
    let server = Logged::start(
        &["--collect", db.path.to_str().unwrap()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_SERVICE_NAME", "chat-web"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment.name=prod%2Deu",
            ),
            (
                "OTEL_SEMCONV_STABILITY_OPT_IN",
                "gen_ai_latest_experimental",
            ),
        ],
    );
    let r = reqwest::Client::new()
        .post(format!("{}collect", server.url))
        .body(field("a", 5.0, now_ms()).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    receiver
        .wait_for(20, "the span", |r| !r.got("/v1/traces").is_empty())
        .await;
    let t = &receiver.got("/v1/traces")[0];
    assert_eq!(t.headers["content-type"], "application/json");
    let doc: ExportTraceServiceRequest = serde_json::from_slice(&t.body).unwrap();
    let resource = doc.resource_spans[0].resource.as_ref().unwrap();
    assert_eq!(
        text_attr(&resource.attributes, "service.name"),
        Some("chat-web")
    );
    assert_eq!(
        text_attr(&resource.attributes, "deployment.environment.name"),
        Some("prod-eu")
    );
    assert_eq!(
        doc.resource_spans[0].schema_url,
        "https://opentelemetry.io/schemas/1.41.0"
    );
    let logs = server.stop();
    assert!(
        logs.contains(&format!("to {}/v1/metrics", receiver.url)),
        "export is never silent: {logs}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_receiver_keeps_the_runs_queued_and_says_why() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let db = Db::new();
    let server = ServeProcess::start(
        ttfx(),
        &[
            "--collect",
            db.path.to_str().unwrap(),
            "--otlp-endpoint",
            &url,
        ],
    )
    .unwrap();
    post(&server, field("a", 5.0, now_ms()).to_string()).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let health = loop {
        let h: Value = reqwest::get(format!("{}field/health", server.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if !h["otlp"]["last_error"].is_null() {
            break h;
        }
        assert!(Instant::now() < deadline, "no error recorded: {h}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(health["otlp"]["pending"], 1, "{health}");
    assert_eq!(
        health["otlp"]["refused"], 0,
        "a network error is retried: {health}"
    );
    let error = health["otlp"]["last_error"].as_str().unwrap();
    assert!(error.starts_with(&format!("{url}/v1/metrics: ")), "{error}");
    // The cause, not only reqwest's "error sending request".
    assert!(error.to_lowercase().contains("connect"), "{error}");
}

/// The specification's other variables: a signal's own wins over the general one (the
/// spans go as http/json with their own headers while the metrics stay protobuf),
/// `gzip` bodies, and TLS to a receiver whose certificate a private CA signed and which
/// asks for a client certificate (`CERTIFICATE`, `CLIENT_CERTIFICATE`, `CLIENT_KEY`).
/// Without any of the three TLS variables no request would get through the handshake.
#[tokio::test(flavor = "multi_thread")]
async fn signal_variables_gzip_and_tls_files_are_honoured() {
    let pki = Pki::new();
    let receiver = Receiver::start_tls(200, &pki).await;
    let db = Db::new();
    let server = Logged::start(
        &["--collect", db.path.to_str().unwrap()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str()),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-team=all"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-team=traces"),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", pki.ca_file.as_str()),
            (
                "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
                pki.client_file.as_str(),
            ),
            (
                "OTEL_EXPORTER_OTLP_CLIENT_KEY",
                pki.client_key_file.as_str(),
            ),
        ],
    );
    let r = reqwest::Client::new()
        .post(format!("{}collect", server.url))
        .body(field("a", 5.0, now_ms()).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    receiver
        .wait_for(20, "both signals", |r| {
            !r.got("/v1/traces").is_empty() && !r.got("/v1/metrics").is_empty()
        })
        .await;
    let m = &receiver.got("/v1/metrics")[0];
    assert_eq!(m.headers["content-encoding"], "gzip");
    assert_eq!(m.headers["content-type"], "application/x-protobuf");
    assert_eq!(m.headers["x-team"], "all");
    let metrics = ExportMetricsServiceRequest::decode(&unzipped(m)[..]).unwrap();
    assert!(!metrics.resource_metrics.is_empty());
    let t = &receiver.got("/v1/traces")[0];
    assert_eq!(t.headers["content-encoding"], "gzip");
    assert_eq!(t.headers["content-type"], "application/json");
    assert_eq!(t.headers["x-team"], "traces");
    let traces: ExportTraceServiceRequest = serde_json::from_slice(&unzipped(t)).unwrap();
    let spans: usize = traces
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum();
    assert_eq!(spans, 1);
    let logs = server.stop();
    assert!(
        logs.contains("(metrics http/protobuf, traces http/json, gzip)"),
        "{logs}"
    );
}
