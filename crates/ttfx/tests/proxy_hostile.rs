//! The vantage proxy read as an attacker would: `ttfx serve` (the real binary) holding a
//! key for a real upstream server started here, and clients sending what an attacker
//! sends — from another host, over a real network boundary (two network namespaces
//! joined by a veth pair, built by the test itself), with forged `Host` headers, with
//! hop-by-hop headers, to paths the key is not for, reusing another request's id. The
//! upstream counts what reached it: a refused request must never get there.

// The fixture server and process helpers are test code outside #[test] functions: a
// failure there is a failed test.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use common::{post_with, ttfx};

const SECRET: &str = "sk-hostile-secret-77";

/// What the upstream received: one entry per request that reached it.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path: String,
    headers: HeaderMap,
}

type SeenLog = Arc<Mutex<Vec<Seen>>>;

/// A stand-in for a provider: every path answers, records what came, and replies with
/// headers a hostile (or careless) upstream may send — cookies for the proxy's origin,
/// an order to wipe its storage, and hop-by-hop headers, one named by `Connection`.
async fn upstream(bind: &str) -> (String, SeenLog) {
    let seen: SeenLog = Arc::default();
    let log = seen.clone();
    let app = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap| {
        let log = log.clone();
        async move {
            log.lock().unwrap().push(Seen {
                method,
                path: uri.path().to_owned(),
                headers,
            });
            Response::builder()
                .header("content-type", "application/json")
                .header("set-cookie", "session=upstream; Path=/")
                .header("set-cookie2", "legacy=1")
                .header("clear-site-data", "\"cookies\", \"storage\"")
                .header("connection", "X-Foo")
                .header("x-foo", "1")
                .header("keep-alive", "timeout=5")
                .header("proxy-authenticate", "Basic realm=upstream")
                .header("trailer", "x-checksum")
                .header("upgrade", "h2c")
                .header("te", "trailers")
                .header("x-kept", "yes")
                .body(axum::body::Body::from("{\"ok\":true}"))
                .unwrap()
        }
    });
    let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

fn write_config(name: &str, text: &str) -> std::path::PathBuf {
    let path =
        std::env::temp_dir().join(format!("ttfx-hostile-{}-{name}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// `ttfx serve` with both its outputs collected, so a test can read the token line and
/// search everything printed afterwards.
struct Serve {
    child: Child,
    port: u16,
    output: Arc<Mutex<String>>,
}

impl Serve {
    fn start(args: &[&str]) -> Serve {
        let mut child = Command::new(ttfx())
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let stderr = BufReader::new(child.stderr.take().unwrap());
        for (lines, tx) in [
            (Box::new(stdout) as Box<dyn BufRead + Send>, Some(tx)),
            (Box::new(stderr), None),
        ] {
            let sink = output.clone();
            std::thread::spawn(move || {
                for line in lines.lines().map_while(Result::ok) {
                    if let (Some(tx), Some(url)) =
                        (&tx, line.strip_prefix("ttfx serve: listening on "))
                    {
                        let _ = tx.send(url.to_owned());
                    }
                    let mut out = sink.lock().unwrap();
                    out.push_str(&line);
                    out.push('\n');
                }
            });
        }
        let url = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        let port = url
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        Serve {
            child,
            port,
            output,
        }
    }

    /// The token the server printed at start (stderr may trail stdout a little).
    fn printed_token(&self) -> String {
        for _ in 0..100 {
            let out = self.output.lock().unwrap().clone();
            if let Some(rest) = out.split("x-ttfx-proxy-token: ").nth(1) {
                return rest.split_whitespace().next().unwrap().to_owned();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no token printed: {}", self.output.lock().unwrap());
    }

    fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `ip ARGS`; the error is its stderr.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}`: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A second host: a network namespace joined to this one by a veth pair, with
/// `host_ip` on this side and `peer_ip` inside. Unique names and a /30 of its own per
/// process and guard; torn down on drop, whatever the test did.
#[must_use = "the namespace is removed when the guard drops"]
struct Netns {
    name: String,
    host_if: String,
    host_ip: String,
    peer_ip: String,
}

impl Netns {
    /// `Err` says why namespaces cannot be made here (not root, no CAP_SYS_ADMIN, no
    /// `ip`); any later failure is a failed test.
    fn new() -> Result<Netns, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let pid = std::process::id() as usize;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("ttfx{pid}n{n}");
        ip(&["netns", "add", &name])?;
        // From here the guard exists, so a failure below still removes what was made.
        // Interface names are at most 15 bytes.
        let tag = format!("{:x}", (pid << 4 | n) & 0xff_ffff);
        let subnet = (pid % 250, (n % 64) * 4);
        let guard = Netns {
            name,
            host_if: format!("tx{tag}a"),
            host_ip: format!("10.231.{}.{}", subnet.0, subnet.1 + 1),
            peer_ip: format!("10.231.{}.{}", subnet.0, subnet.1 + 2),
        };
        let peer_if = format!("tx{tag}b");
        let (ns, host_if) = (guard.name.as_str(), guard.host_if.as_str());
        let host_cidr = format!("{}/30", guard.host_ip);
        let peer_cidr = format!("{}/30", guard.peer_ip);
        let steps: [&[&str]; 7] = [
            &[
                "link", "add", host_if, "type", "veth", "peer", "name", &peer_if,
            ],
            &["link", "set", &peer_if, "netns", ns],
            &["addr", "add", &host_cidr, "dev", host_if],
            &["link", "set", host_if, "up"],
            &["-n", ns, "addr", "add", &peer_cidr, "dev", &peer_if],
            &["-n", ns, "link", "set", &peer_if, "up"],
            &["-n", ns, "link", "set", "lo", "up"],
        ];
        for step in steps {
            if let Err(e) = ip(step) {
                panic!("building the namespace: {e}");
            }
        }
        Ok(guard)
    }

    /// Runs `curl ARGS` inside the namespace (the other host); returns the status code
    /// and the body.
    fn curl(&self, args: &[&str]) -> (u16, String) {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.name,
                "curl",
                "-sS",
                "--max-time",
                "10",
            ])
            .args(["-w", "\n%{http_code}"])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        let code = code.trim().parse().unwrap_or_else(|_| {
            panic!(
                "curl {args:?}: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (code, body.to_owned())
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Removing the namespace removes its end of the pair and so the pair; the host
        // end is removed too in case the move never happened.
        let _ = ip(&["netns", "del", &self.name]);
        let _ = ip(&["link", "del", &self.host_if]);
    }
}

/// A namespace, or `None` after saying loudly (stderr, and `$TTFX_E2E_MISSING` for the
/// summary of `cargo xtask test`) that this test's network boundary cannot be built
/// here. Anything but a refusal to make namespaces is a failure, not a skip.
fn netns_or_say_why(test: &str) -> Option<Netns> {
    match Netns::new() {
        Ok(ns) => Some(ns),
        Err(why) => {
            let line = format!(
                "MISSING {test} — a second host in a network namespace: {why} \
                 (run as root, or with CAP_SYS_ADMIN and CAP_NET_ADMIN)"
            );
            eprintln!("\n!!!!!!!! {line}\n");
            if let Some(path) = std::env::var_os("TTFX_E2E_MISSING") {
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .unwrap();
                writeln!(f, "{line}").unwrap();
            }
            None
        }
    }
}

/// A server listening beyond loopback with a key: a client on another host (another
/// network namespace, across a veth pair) without the token is refused with 401, one
/// forging `Host: localhost` is refused even with it, and the upstream sees none of
/// them; with the token it passes, the key is added and the token is not forwarded.
/// The token is printed once, at start, and nowhere after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_on_the_network_cannot_spend_the_keys_without_the_token() {
    let Some(net) =
        netns_or_say_why("a_client_on_the_network_cannot_spend_the_keys_without_the_token")
    else {
        return;
    };
    let (up, seen) = upstream("127.0.0.1:0").await;
    let config = write_config(
        "netns",
        &format!("[upstreams.fix]\nbase_url = \"{up}\"\napi_key = \"{SECRET}\"\n"),
    );
    let serve = Serve::start(&["--addr", "0.0.0.0:0", "--config", config.to_str().unwrap()]);
    let token = serve.printed_token();
    assert_eq!(token.len(), 64, "256 bits as hex: {token}");
    let url = format!("http://{}:{}/proxy/fix/v1/chat", net.host_ip, serve.port);
    let list = format!("http://{}:{}/proxy", net.host_ip, serve.port);
    let token_header = format!("x-ttfx-proxy-token: {token}");
    let wrong_header = format!("x-ttfx-proxy-token: {}", "0".repeat(64));
    let forged_ports = [
        format!("Host: localhost:{}", serve.port),
        format!("Host: 127.0.0.1:{}", serve.port),
        format!("Host: [::1]:{}", serve.port),
    ];
    // What curl sends by default: no Origin, no Sec-Fetch-Site (passed before).
    let refused: Vec<(Vec<&str>, u16, &str)> = vec![
        (vec!["-X", "POST", "-d", "{}", &url], 401, "token"),
        (
            vec!["-H", &wrong_header, "-d", "{}", &url],
            401,
            "does not carry",
        ),
        (vec![&list], 401, "token"),
        (
            vec![
                "-H",
                &forged_ports[0],
                "-H",
                &token_header,
                "-d",
                "{}",
                &url,
            ],
            403,
            "forged Host",
        ),
        (
            vec![
                "-H",
                &forged_ports[1],
                "-H",
                &token_header,
                "-d",
                "{}",
                &url,
            ],
            403,
            "forged Host",
        ),
        (
            vec![
                "-H",
                &forged_ports[2],
                "-H",
                &token_header,
                "-d",
                "{}",
                &url,
            ],
            403,
            "forged Host",
        ),
        (
            vec!["-H", &forged_ports[0], "-d", "{}", &url],
            403,
            "forged Host",
        ),
    ];
    for (args, status, why) in &refused {
        let (code, body) = net.curl(args);
        assert_eq!(code, *status, "{args:?}: {body}");
        assert!(body.contains(why), "{args:?}: {body}");
        assert!(!body.contains(&token), "a refusal echoed the token");
    }
    assert_eq!(
        seen.lock().unwrap().len(),
        0,
        "a refused request reached the upstream"
    );

    let (code, body) = net.curl(&["-H", &token_header, "-d", "{}", &url]);
    assert_eq!(code, 200, "{body}");
    let (code, body) = net.curl(&["-H", &token_header, &list]);
    assert_eq!(code, 200, "{body}");
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        let h = &seen[0].headers;
        assert_eq!(
            h.get("authorization").unwrap(),
            &format!("Bearer {SECRET}"),
            "the key is added server-side"
        );
        assert!(
            h.get("x-ttfx-proxy-token").is_none(),
            "the token went upstream"
        );
    }
    // Off loopback every request needs it, this machine's own included.
    let local = format!("http://127.0.0.1:{}/proxy/fix/v1/chat", serve.port);
    let c = post_with(&local, "{}", &[]).await;
    assert_eq!(c.status, 401, "{}", c.text());
    let c = post_with(&local, "{}", &[("x-ttfx-proxy-token", &token)]).await;
    assert_eq!(c.status, 200, "{}", c.text());
    assert_eq!(seen.lock().unwrap().len(), 2);
    let out = serve.output();
    assert_eq!(out.matches(&token).count(), 1, "printed once: {out}");
    assert!(!out.contains(SECRET));
}

/// A token chosen with `--proxy-token-file` guards even a loopback server, and a token
/// too short to be secret is refused at start.
#[tokio::test]
async fn a_given_proxy_token_is_required_and_a_weak_one_is_refused() {
    let (up, seen) = upstream("127.0.0.1:0").await;
    let config = write_config(
        "token-file",
        &format!("[upstreams.fix]\nbase_url = \"{up}\"\napi_key = \"{SECRET}\"\n"),
    );
    let dir = tempfile::tempdir().unwrap();
    let weak = dir.path().join("weak");
    std::fs::write(&weak, "hunter2\n").unwrap();
    let out = Command::new(ttfx())
        .args(["serve", "--addr", "127.0.0.1:0", "--proxy-token-file"])
        .arg(&weak)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("proxy token has 7 characters"), "{err}");
    assert!(
        !err.contains("hunter2"),
        "the refusal echoed the token: {err}"
    );

    let token = "t".repeat(20) + &"9".repeat(20);
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    let serve = Serve::start(&[
        "--addr",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
        "--proxy-token-file",
        file.to_str().unwrap(),
    ]);
    let url = format!("http://127.0.0.1:{}/proxy/fix/v1/chat", serve.port);
    assert_eq!(post_with(&url, "{}", &[]).await.status, 401);
    assert_eq!(seen.lock().unwrap().len(), 0);
    let c = post_with(&url, "{}", &[("x-ttfx-proxy-token", &token)]).await;
    assert_eq!(c.status, 200, "{}", c.text());
    assert!(
        !serve.output().contains(&token),
        "a given token is never printed"
    );
}

/// Sends `request` on a raw socket (HTTP clients drop or rewrite hop-by-hop headers) and
/// returns the response's status line and headers, names lowercased.
fn raw(port: u16, request: &str) -> (String, Vec<(String, String)>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let head = text.split("\r\n\r\n").next().unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers)
}

/// Hop-by-hop headers go neither way — the fixed ones and those a `Connection` header
/// names — and an upstream cannot set cookies on, or wipe the storage of, this server's
/// origin through the proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hop_by_hop_headers_and_upstream_cookies_do_not_cross_the_proxy() {
    let (up, seen) = upstream("127.0.0.1:0").await;
    let config = write_config(
        "hop",
        &format!("[upstreams.fix]\nbase_url = \"{up}\"\napi_key = \"{SECRET}\"\n"),
    );
    let serve = Serve::start(&[
        "--addr",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
    ]);
    let port = serve.port;
    let request = format!(
        "POST /proxy/fix/v1/chat HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Connection: close, X-Bar\r\nX-Bar: secret-for-this-hop\r\nKeep-Alive: timeout=5\r\n\
         TE: trailers\r\nTrailer: x-checksum\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\n\
         Proxy-Connection: keep-alive\r\nX-Ttfx-Proxy-Token: not-needed-here\r\n\
         X-Client-Kept: yes\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    let (status, headers) = tokio::task::spawn_blocking(move || raw(port, &request))
        .await
        .unwrap();
    assert!(status.contains(" 200 "), "{status}");
    let names: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    for dropped in [
        "set-cookie",
        "set-cookie2",
        "clear-site-data",
        "x-foo",
        "keep-alive",
        "proxy-authenticate",
        "trailer",
        "upgrade",
        "te",
    ] {
        assert!(
            !names.contains(&dropped),
            "{dropped} reached the client: {headers:?}"
        );
    }
    for (k, v) in &headers {
        if k == "connection" {
            assert!(!v.to_ascii_lowercase().contains("x-foo"), "{v}");
        }
    }
    assert!(
        names.contains(&"x-kept"),
        "an ordinary header is relayed: {headers:?}"
    );

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let h = &seen[0].headers;
    for dropped in [
        "x-bar",
        "keep-alive",
        "te",
        "trailer",
        "proxy-authorization",
        "proxy-connection",
        "x-ttfx-proxy-token",
    ] {
        assert!(
            h.get(dropped).is_none(),
            "{dropped} reached the upstream: {h:?}"
        );
    }
    for v in h.get_all("connection") {
        assert!(
            !v.to_str().unwrap().to_ascii_lowercase().contains("x-bar"),
            "{v:?}"
        );
    }
    assert_eq!(h.get("x-client-kept").unwrap(), "yes");
}

/// A configured key goes to the upstream's API paths only: a client naming another
/// path of the provider (its admin or billing API) is refused, and nothing is sent.
#[tokio::test]
async fn a_configured_key_is_not_sent_to_a_path_outside_the_api() {
    let (up, seen) = upstream("127.0.0.1:0").await;
    let config = write_config(
        "key-paths",
        &format!(
            "[upstreams.openai]\npreset = \"openai\"\nbase_url = \"{up}\"\napi_key = \"{SECRET}\"\n\
             [upstreams.narrow]\nbase_url = \"{up}\"\napi_key = \"{SECRET}\"\n\
             key_paths = [\"v2/infer/\"]\n"
        ),
    );
    let serve = Serve::start(&[
        "--addr",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
    ]);
    let base = format!("http://127.0.0.1:{}/proxy", serve.port);
    for path in [
        "openai/v1/organization/admin_api_keys",
        "openai/v1/files",
        "openai/v1/fine_tuning/jobs",
        "openai/dashboard/billing/usage",
        "openai/v1/chat/completionsX",
        "openai/v10/chat/completions",
        "openai",
        "narrow/v1/chat/completions",
        "narrow/v2/inference",
    ] {
        let c = post_with(&format!("{base}/{path}"), "{}", &[]).await;
        assert_eq!(c.status, 403, "{path}: {}", c.text());
        assert!(
            c.text().contains("only to its API paths"),
            "{path}: {}",
            c.text()
        );
    }
    assert_eq!(
        seen.lock().unwrap().len(),
        0,
        "a refused path reached the upstream"
    );
    for path in [
        "openai/v1/chat/completions",
        "openai/v1/responses",
        "narrow/v2/infer/run",
    ] {
        let c = post_with(&format!("{base}/{path}"), "{}", &[]).await;
        assert_eq!(c.status, 200, "{path}: {}", c.text());
    }
    let seen = seen.lock().unwrap();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/v1/chat/completions", "/v1/responses", "/v2/infer/run"]
    );
    assert!(seen.iter().all(|s| s.method == Method::POST));
}

/// A client's own key is not sent in clear text across a network: an upstream reached
/// over plain HTTP at an address that is not loopback (the host's end of a veth pair)
/// gets no client `Authorization`, `x-api-key` or `api-key` unless its config says
/// `insecure = true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_own_key_does_not_cross_plain_http_off_loopback() {
    let Some(net) = netns_or_say_why("a_clients_own_key_does_not_cross_plain_http_off_loopback")
    else {
        return;
    };
    let (up, seen) = upstream(&format!("{}:0", net.host_ip)).await;
    let config = write_config(
        "clear",
        &format!(
            "[upstreams.lan]\nbase_url = \"{up}\"\n\
             [upstreams.lan-insecure]\nbase_url = \"{up}\"\ninsecure = true\n"
        ),
    );
    let serve = Serve::start(&[
        "--addr",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
    ]);
    let base = format!("http://127.0.0.1:{}/proxy", serve.port);
    for (name, value) in [
        ("authorization", "Bearer client-key"),
        ("x-api-key", "client-key"),
        ("api-key", "client-key"),
    ] {
        let c = post_with(&format!("{base}/lan/v1/chat"), "{}", &[(name, value)]).await;
        assert_eq!(c.status, 403, "{name}: {}", c.text());
        assert!(c.text().contains("clear text"), "{}", c.text());
    }
    assert_eq!(
        seen.lock().unwrap().len(),
        0,
        "a client key crossed in clear text"
    );
    // Without a key the request goes; with insecure the client's key goes too.
    assert_eq!(
        post_with(&format!("{base}/lan/v1/chat"), "{}", &[])
            .await
            .status,
        200
    );
    let c = post_with(
        &format!("{base}/lan-insecure/v1/chat"),
        "{}",
        &[("authorization", "Bearer client-key")],
    )
    .await;
    assert_eq!(c.status, 200, "{}", c.text());
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(seen[0].headers.get("authorization").is_none());
    assert_eq!(
        seen[1].headers.get("authorization").unwrap(),
        "Bearer client-key"
    );
    drop(net);
}

/// Records: a server-made id is 128 random bits; a request naming the id of a kept
/// record (its own `x-request-id`) is refused, at /sim and at /proxy, before anything
/// is sent, and the first record stays as it was; a page on another origin cannot read
/// a record (no `Access-Control-Allow-Origin: *`), one on an allowed origin can.
#[tokio::test]
async fn a_record_cannot_be_replaced_by_another_request_or_read_by_another_site() {
    let (up, seen) = upstream("127.0.0.1:0").await;
    let config = write_config(
        "records",
        &format!(
            "[upstreams.fix]\nbase_url = \"{up}\"\napi_key = \"{SECRET}\"\n\
             [proxy]\nallowed_origins = [\"http://localhost:5173\"]\n"
        ),
    );
    let serve = Serve::start(&[
        "--addr",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
    ]);
    let root = format!("http://127.0.0.1:{}/", serve.port);
    let sim = format!("{root}sim/default/v1/chat/completions?ttft_ms=0&output_tokens=1");

    let c = post_with(&sim, "{}", &[]).await;
    let id = c.header("x-request-id").unwrap().to_owned();
    let hex = id.strip_prefix("ttfx-").unwrap();
    assert!(
        hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()),
        "{id}"
    );

    let c = post_with(
        &format!("{root}proxy/fix/v1/a"),
        "{}",
        &[("x-request-id", "mine-1")],
    )
    .await;
    assert_eq!(c.status, 200);
    let first = common::record(&root, "mine-1").await;
    for url in [format!("{root}proxy/fix/v1/b"), sim.clone()] {
        let c = post_with(&url, "{}", &[("x-request-id", "mine-1")]).await;
        assert_eq!(c.status, 409, "{url}: {}", c.text());
        assert!(c.text().contains("write-once"), "{}", c.text());
    }
    let c = post_with(&sim, "{}", &[("x-request-id", &id)]).await;
    assert_eq!(c.status, 409, "a server-made id is write-once too");
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "a refused request reached the upstream"
    );
    assert_eq!(common::record(&root, "mine-1").await, first);
    assert_eq!(first["path"], "/proxy/fix/v1/a");

    let client = reqwest::Client::new();
    let read = |origin: &'static str| {
        client
            .get(format!("{root}records/mine-1"))
            .header("origin", origin)
            .send()
    };
    let evil = read("https://evil.example").await.unwrap();
    assert_eq!(evil.status(), 200);
    assert!(evil.headers().get("access-control-allow-origin").is_none());
    let lab = read("http://localhost:5173").await.unwrap();
    assert_eq!(
        lab.headers().get("access-control-allow-origin").unwrap(),
        "http://localhost:5173"
    );
}

/// Record ids cannot be guessed from earlier ones: 1,000 requests get 1,000 distinct
/// ids of 32 hex digits, not counted up, with their bits spread as random bits are.
#[tokio::test]
async fn record_ids_cannot_be_guessed_from_earlier_ones() {
    let serve = Serve::start(&["--addr", "127.0.0.1:0"]);
    let sim = format!(
        "http://127.0.0.1:{}/sim/default/v1/chat/completions?ttft_ms=0&output_tokens=1",
        serve.port
    );
    let mut ids: Vec<u128> = Vec::with_capacity(1_000);
    for _ in 0..1_000 {
        let c = post_with(&sim, "{}", &[]).await;
        assert_eq!(c.status, 200, "{}", c.text());
        let id = c.header("x-request-id").unwrap();
        let hex = id.strip_prefix("ttfx-").unwrap();
        assert!(
            hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        ids.push(u128::from_str_radix(hex, 16).unwrap());
    }
    let distinct: std::collections::HashSet<u128> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), ids.len(), "an id came twice");
    // Not a counter, nor a counter in the high bits: consecutive random ids differ by
    // less than 2^64 with probability about 2^-63 per pair.
    for pair in ids.windows(2) {
        assert!(pair[0].abs_diff(pair[1]) > 1 << 64, "{:x?}", pair);
    }
    // 128,000 random bits: one bits number 64,000 ± 179 (one standard deviation); a
    // bound of ±1 % is over 7 deviations, so a fair source never fails it, while a
    // counter, a timestamp or a short random part padded with zeros does.
    let ones: u32 = ids.iter().map(|id| id.count_ones()).sum();
    let total = 128.0 * ids.len() as f64;
    let share = f64::from(ones) / total;
    assert!((0.49..=0.51).contains(&share), "share of one bits {share}");
    // Every one of the 128 bits varies across the ids (none is fixed).
    let varies = ids.iter().fold(0u128, |acc, id| acc | (id ^ ids[0]));
    assert_eq!(varies, u128::MAX, "bits that never change: {:x}", !varies);
}
