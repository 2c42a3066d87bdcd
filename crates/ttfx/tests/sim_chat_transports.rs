//! The simulator's chat stream over the transports a page without the probe may use
//! besides a POST: a GET with the request in the query (for `EventSource`) and a
//! WebSocket speaking Realtime-style events. Real loopback HTTP and sockets against a
//! `ttfx serve` process; the injected delays are checked from the client's side.

// Test helpers outside `#[test]` fns: a failure there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{answer, capture, decode, ms, record, ttfx};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use ttfx_core::decode::DialectKind;
use ttfx_e2e::ServeProcess;

/// Lateness allowed against an injected deadline (see sim_dialects.rs's `LATE_MS`).
const LATE_MS: f64 = 80.0;

fn server() -> ServeProcess {
    ServeProcess::start(ttfx(), &[]).unwrap()
}

#[tokio::test]
async fn a_get_streams_the_same_chat_completions_as_a_post() {
    let server = server();
    let url = format!(
        "{}sim/default/v1/chat/completions?prompt=Hello%20there&ttft_ms=150&output_tokens=6\
         &tokens_per_second=50&include_usage=true&model=m1",
        server.url
    );
    // As `EventSource` sends it, from a page of another origin.
    let request = reqwest::Client::new()
        .get(&url)
        .header("accept", "text/event-stream")
        .header("origin", "http://127.0.0.1:1");
    let got = capture(request).await;
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.header("content-type"), Some("text/event-stream"));
    assert_eq!(got.header("access-control-allow-origin"), Some("*"));
    let text = got.text();
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    assert!(text.contains("\"model\":\"m1\""), "{text}");
    let decoded = decode(&got, Some(DialectKind::OpenAiChat));
    assert_eq!(decoded.summary.visible_text, answer(6));
    // The prompt is read as the POST's `messages` would be: "user" + the text.
    let usage = decoded.summary.usage.as_ref().unwrap();
    let chars = "user".len() + "Hello there".len();
    assert_eq!(usage.prompt_tokens, Some(chars.div_ceil(4) as u64));
    let first = ms(decoded.first_visible.unwrap());
    assert!((150.0..150.0 + LATE_MS).contains(&first), "{first}");
    let id = got.header("x-request-id").unwrap();
    let r = record(&server.url, id).await;
    assert_eq!(r["outcome"], "completed", "{r}");
    assert_eq!(r["path"], "/sim/default/v1/chat/completions", "{r}");
}

#[tokio::test]
async fn a_get_is_refused_as_a_post_is() {
    let server = server();
    let bad = capture(reqwest::Client::new().get(format!(
        "{}sim/default/v1/chat/completions?prompt=x&ttft_ms=soon",
        server.url
    )))
    .await;
    assert_eq!(bad.status, 400);
    let body: Value = serde_json::from_slice(&bad.body()).unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ttft_ms"),
        "{body}"
    );
    let unknown = capture(reqwest::Client::new().get(format!(
        "{}sim/nope/v1/chat/completions?prompt=x",
        server.url
    )))
    .await;
    assert_eq!(unknown.status, 404);
    // Only chat completions answers a GET.
    let other =
        capture(reqwest::Client::new().get(format!("{}sim/default/v1/responses", server.url)))
            .await;
    assert_eq!(other.status, 405);
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(server: &ServeProcess, query: &str) -> Socket {
    let url = format!(
        "{}sim/default/v1/realtime?{query}",
        server.url.replace("http://", "ws://")
    );
    let (socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    socket
}

async fn send(socket: &mut Socket, event: Value) {
    socket.send(Message::text(event.to_string())).await.unwrap();
}

/// The next text message as JSON, within 5 s.
async fn next(socket: &mut Socket) -> Value {
    let message = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .expect("no message within 5 s")
        .expect("the socket ended")
        .unwrap();
    match message {
        Message::Text(text) => serde_json::from_str(text.as_str()).unwrap(),
        other => panic!("not a text message: {other:?}"),
    }
}

fn user_item(text: &str) -> Value {
    json!({
        "type": "conversation.item.create",
        "item": { "type": "message", "role": "user",
                  "content": [{ "type": "input_text", "text": text }] },
    })
}

/// One turn: the item, then `response.create`; every event until `response.done`, with
/// each delta's arrival after `response.create` was sent.
async fn turn(socket: &mut Socket, prompt: &str) -> (Vec<Value>, Vec<(f64, String)>) {
    send(socket, user_item(prompt)).await;
    let created = next(socket).await;
    assert_eq!(created["type"], "conversation.item.created", "{created}");
    assert_eq!(created["item"]["content"][0]["text"], prompt);
    let sent = Instant::now();
    send(socket, json!({ "type": "response.create" })).await;
    let (mut events, mut deltas) = (Vec::new(), Vec::new());
    loop {
        let event = next(socket).await;
        if event["type"] == "response.output_text.delta" {
            let text = event["delta"].as_str().unwrap().to_owned();
            deltas.push((ms(sent.elapsed()), text));
        }
        let done = event["type"] == "response.done";
        events.push(event);
        if done {
            return (events, deltas);
        }
    }
}

#[tokio::test]
async fn the_realtime_socket_streams_turns_at_the_profiles_times() {
    let server = server();
    let mut socket = connect(
        &server,
        "model=rt-1&ttft_ms=150&output_tokens=5&tokens_per_second=50",
    )
    .await;
    let hello = next(&mut socket).await;
    assert_eq!(hello["type"], "session.created", "{hello}");
    assert_eq!(hello["session"]["model"], "rt-1");

    let mut input_tokens = Vec::new();
    for prompt in ["What is streaming?", "And then?"] {
        let (events, deltas) = turn(&mut socket, prompt).await;
        let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds[..3],
            [
                "response.created",
                "response.output_item.added",
                "response.content_part.added"
            ]
        );
        assert_eq!(
            kinds[kinds.len() - 4..],
            [
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.done"
            ]
        );
        let text: String = deltas.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(text, answer(5));
        // The first delta at ttft_ms, the last 4 intervals of 20 ms later.
        let (first, last) = (deltas[0].0, deltas[deltas.len() - 1].0);
        assert!((150.0..150.0 + LATE_MS).contains(&first), "{deltas:?}");
        assert!(last >= 230.0, "{deltas:?}");
        let response_id = &events[0]["response"]["id"];
        let item_id = &events[1]["item"]["id"];
        for e in &events {
            assert!(e["event_id"].is_string(), "{e}");
            if e["type"] == "response.output_text.delta" {
                assert_eq!(&e["response_id"], response_id, "{e}");
                assert_eq!(&e["item_id"], item_id, "{e}");
            }
        }
        let done = &events[events.len() - 1]["response"];
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["output"][0]["content"][0]["text"], answer(5));
        let usage = &done["usage"];
        assert_eq!(usage["output_tokens"], 5, "{usage}");
        assert_eq!(
            usage["total_tokens"].as_u64(),
            Some(usage["input_tokens"].as_u64().unwrap() + 5)
        );
        input_tokens.push(usage["input_tokens"].as_u64().unwrap());
    }
    // The second turn's input holds the whole conversation: both prompts and the reply.
    assert!(input_tokens[1] > input_tokens[0], "{input_tokens:?}");
    socket.close(None).await.unwrap();
}

#[tokio::test]
async fn bad_client_events_get_an_error_event_and_the_socket_lives_on() {
    let server = server();
    let mut socket = connect(&server, "ttft_ms=300&output_tokens=3").await;
    assert_eq!(next(&mut socket).await["type"], "session.created");

    socket.send(Message::text("not json")).await.unwrap();
    let e = next(&mut socket).await;
    assert_eq!(
        (&e["type"], &e["error"]["code"]),
        (&json!("error"), &json!("invalid_json")),
        "{e}"
    );

    send(
        &mut socket,
        json!({ "type": "input_audio_buffer.append", "event_id": "c7" }),
    )
    .await;
    let e = next(&mut socket).await;
    assert_eq!(e["error"]["code"], "unknown_event", "{e}");
    assert_eq!(e["error"]["event_id"], "c7", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("input_audio_buffer.append")
    );

    socket.send(Message::binary(vec![1, 2, 3])).await.unwrap();
    assert_eq!(next(&mut socket).await["error"]["code"], "invalid_message");

    send(&mut socket, json!({ "type": "conversation.item.create" })).await;
    assert_eq!(
        next(&mut socket).await["error"]["code"],
        "missing_required_parameter"
    );

    send(&mut socket, json!({ "type": "response.cancel" })).await;
    assert_eq!(
        next(&mut socket).await["error"]["code"],
        "response_cancel_not_active"
    );

    // A second response.create while one runs is refused; a cancel ends the first.
    send(&mut socket, json!({ "type": "response.create" })).await;
    assert_eq!(next(&mut socket).await["type"], "response.created");
    send(&mut socket, json!({ "type": "response.create" })).await;
    let mut refused = false;
    let mut cancelled = false;
    // The rest of the opening events, the refusal, then the cancel's response.done.
    for _ in 0..8 {
        let e = next(&mut socket).await;
        if e["type"] == "error" {
            assert_eq!(
                e["error"]["code"],
                "conversation_already_has_active_response"
            );
            refused = true;
            send(&mut socket, json!({ "type": "response.cancel" })).await;
        }
        if e["type"] == "response.done" {
            assert_eq!(e["response"]["status"], "cancelled", "{e}");
            cancelled = true;
            break;
        }
    }
    assert!(refused && cancelled);

    // After all that, a turn still works.
    let (_, deltas) = turn(&mut socket, "still there?").await;
    let text: String = deltas.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(text, answer(3));
}

#[tokio::test]
async fn a_message_past_the_limit_closes_the_socket_with_1009() {
    let server = server();
    let mut socket = connect(&server, "").await;
    assert_eq!(next(&mut socket).await["type"], "session.created");
    let big = "x".repeat((2 << 20) + 1);
    let _ = socket.send(Message::text(big)).await;
    let end = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .unwrap();
    match end {
        Some(Ok(Message::Close(Some(frame)))) => {
            assert_eq!(frame.code, CloseCode::Size, "{frame:?}");
            assert!(frame.reason.contains("2097152 bytes"), "{frame:?}");
        }
        other => panic!("expected a close frame, got {other:?}"),
    }
}

#[tokio::test]
async fn the_handshake_refuses_what_a_request_would_be_refused() {
    let server = server();
    let base = server.url.replace("http://", "ws://");
    for (path, status, says) in [
        ("sim/default/v1/realtime?ttft_ms=soon", 400, "ttft_ms"),
        ("sim/nope/v1/realtime", 404, "unknown profile"),
        ("sim/default/v1/realtime?fail=429", 429, "injected HTTP 429"),
    ] {
        let e = tokio_tungstenite::connect_async(format!("{base}{path}"))
            .await
            .unwrap_err();
        let tokio_tungstenite::tungstenite::Error::Http(res) = e else {
            panic!("{path}: {e}");
        };
        assert_eq!(res.status().as_u16(), status, "{path}");
        let body = String::from_utf8_lossy(res.body().as_deref().unwrap_or_default()).into_owned();
        assert!(body.contains(says), "{path}: {body}");
    }
}

#[tokio::test]
async fn injected_failures_end_a_response_as_the_http_routes_do() {
    let server = server();
    let mut socket = connect(&server, "ttft_ms=0&output_tokens=6&fail=error&fail_after=2").await;
    assert_eq!(next(&mut socket).await["type"], "session.created");
    let (events, deltas) = turn(&mut socket, "hi").await;
    assert_eq!(deltas.len(), 2, "{deltas:?}");
    let done = &events[events.len() - 1]["response"];
    assert_eq!(done["status"], "failed", "{done}");
    assert!(
        done["status_details"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("injected failure")
    );

    let mut socket = connect(&server, "ttft_ms=0&output_tokens=6&fail=drop&fail_after=2").await;
    assert_eq!(next(&mut socket).await["type"], "session.created");
    send(&mut socket, user_item("hi")).await;
    send(&mut socket, json!({ "type": "response.create" })).await;
    let mut deltas = 0;
    loop {
        match tokio::time::timeout(Duration::from_secs(5), socket.next())
            .await
            .unwrap()
        {
            Some(Ok(Message::Text(t))) => {
                deltas += usize::from(t.as_str().contains("response.output_text.delta"));
            }
            // No close frame: the connection just ends.
            Some(Ok(Message::Close(frame))) => panic!("a close frame: {frame:?}"),
            Some(Ok(_)) => {}
            Some(Err(_)) | None => break,
        }
    }
    assert_eq!(deltas, 2);
}

#[tokio::test]
async fn the_output_limit_cuts_a_response_as_incomplete() {
    let server = server();
    let mut socket = connect(&server, "ttft_ms=0&output_tokens=6&tokens_per_second=200").await;
    assert_eq!(next(&mut socket).await["type"], "session.created");
    // The session's limit, then one response's own, which wins.
    send(
        &mut socket,
        json!({ "type": "session.update", "session": { "max_output_tokens": 4 } }),
    )
    .await;
    let updated = next(&mut socket).await;
    assert_eq!(updated["type"], "session.updated", "{updated}");
    assert_eq!(updated["session"]["max_output_tokens"], 4);
    for (ask, tokens) in [(None, 4), (Some(2), 2)] {
        send(&mut socket, user_item("hi")).await;
        assert_eq!(next(&mut socket).await["type"], "conversation.item.created");
        let create = match ask {
            Some(n) => json!({ "type": "response.create", "response": { "max_output_tokens": n } }),
            None => json!({ "type": "response.create" }),
        };
        send(&mut socket, create).await;
        let done = loop {
            let e = next(&mut socket).await;
            if e["type"] == "response.done" {
                break e;
            }
        };
        let response = &done["response"];
        assert_eq!(response["status"], "incomplete", "{done}");
        assert_eq!(response["status_details"]["reason"], "max_output_tokens");
        assert_eq!(response["usage"]["output_tokens"], tokens, "{done}");
        assert_eq!(response["output"][0]["content"][0]["text"], answer(tokens));
    }
}

#[tokio::test]
async fn sockets_past_the_limit_are_refused_with_503_and_a_closed_one_frees_its_place() {
    // MAX_REALTIME_SOCKETS (ttfx-sim's limits.rs): once upgraded, a socket holds no
    // in-flight or connection place, so only this count bounds them.
    const MAX: usize = 1_024;
    let server = server();
    let mut open = Vec::with_capacity(MAX);
    for _ in 0..MAX {
        open.push(connect(&server, "").await);
    }
    let base = server.url.replace("http://", "ws://");
    let e = tokio_tungstenite::connect_async(format!("{base}sim/default/v1/realtime"))
        .await
        .unwrap_err();
    let tokio_tungstenite::tungstenite::Error::Http(res) = e else {
        panic!("the socket past the limit was not refused: {e}");
    };
    assert_eq!(res.status().as_u16(), 503);
    assert_eq!(res.headers()["retry-after"], "1");
    let body = String::from_utf8_lossy(res.body().as_deref().unwrap_or_default()).into_owned();
    assert!(body.contains("1024 realtime sockets open"), "{body}");
    // One closes: its place is free again (the server sees the close a moment later).
    let mut first = open.remove(0);
    first.close(None).await.unwrap();
    drop(first);
    let mut reopened = None;
    for _ in 0..50 {
        if let Ok((s, _)) =
            tokio_tungstenite::connect_async(format!("{base}sim/default/v1/realtime")).await
        {
            reopened = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        reopened.is_some(),
        "a closed socket's place was never given back"
    );
}
