//! Readiness: a WebDriver server answers `GET /status`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

/// Whether a WebDriver server answers `GET /status` at `addr` (`host:port`): its W3C body
/// names `ready`. A bare TCP connect is not enough: it also succeeds when another process
/// holds the port. Plain HTTP/1.1 over a short-lived connection; loopback only.
pub fn answers_webdriver_status(addr: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /status HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut response);
    is_webdriver_status(&String::from_utf8_lossy(&response))
}

/// A 200 response whose JSON body has `value.ready` (any driver, ready or busy).
fn is_webdriver_status(response: &str) -> bool {
    let Some((head, body)) = response.split_once("\r\n\r\n") else {
        return false;
    };
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return false;
    }
    // Drivers answer with Content-Length; a chunked body would start with its size line.
    let json = body.find('{').map_or("", |start| &body[start..]);
    let json = json.rfind('}').map_or("", |end| &json[..=end]);
    serde_json::from_str::<Value>(json)
        .is_ok_and(|v| v.get("value").and_then(|v| v.get("ready")).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A loopback server that answers every connection with `response`.
    fn answering(response: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut request = [0u8; 1024];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(response.as_bytes());
            }
        });
        addr
    }

    #[test]
    fn readiness_needs_a_webdriver_status_not_just_a_listener() {
        let driver = answering(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 61\r\n\r\n\
             {\"value\":{\"message\":\"ready for new sessions\",\"ready\":true}}",
        );
        assert!(answers_webdriver_status(&driver));
        let busy = answering("HTTP/1.1 200 OK\r\n\r\n{\"value\":{\"ready\":false}}");
        assert!(
            answers_webdriver_status(&busy),
            "a busy driver is still ours"
        );
        let other = answering("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found");
        assert!(!answers_webdriver_status(&other));
        let html = answering("HTTP/1.1 200 OK\r\n\r\n<html>{\"ready\": 1}</html>");
        assert!(!answers_webdriver_status(&html));
        let closed = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap().to_string();
        drop(closed);
        assert!(!answers_webdriver_status(&addr));
    }
}
