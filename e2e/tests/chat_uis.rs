//! The chat UI fixtures of e2e/chat-uis are real chat UIs: in each engine, a prompt typed
//! and sent (the button, then Enter) appends the user's message and a reply that streams
//! the simulator's exact text, over each page's own transport (EventSource,
//! XMLHttpRequest, a WebSocket, the `openai` client or the Vercel AI SDK's `streamText` in
//! a Vite-built React app), from an API on another origin; a second turn appends a second
//! reply. None of the pages loads the probe: these tests are the ground `ttfx run --url … --inject` measures on.

use std::time::{Duration, Instant};

use fantoccini::Client;
use serde_json::Value;
use ttfx_e2e::chat_uis::{self, ChatUi, Kind};
use ttfx_e2e::engines::Engine;
use ttfx_e2e::{Browser, engines};
// The simulator's own word list, so the expected text cannot drift from it.
use ttfx_sim::text;

/// First token 200 ms after the request arrives, then 11 more at 60 tokens/s.
const TTFT_MS: f64 = 200.0;
const TOKENS: usize = 12;
const OVERRIDES: &str = "ttft_ms=200&output_tokens=12&tokens_per_second=60";
/// The earliest a reply can be complete, from the click: the last token's deadline.
const REPLY_MS: f64 = TTFT_MS + (TOKENS - 1) as f64 * 1000.0 / 60.0;
const WAIT: Duration = Duration::from_secs(30);

async fn two_turns(kind: Kind, engine: Engine) -> anyhow::Result<()> {
    let ui = ChatUi::serve(kind)?;
    let browser = Browser::start(engine)?;
    let client = browser.session().await?;
    let result = async {
        client.goto(&ui.page_url("default", OVERRIDES)).await?;
        for (turn, prompt) in [(1, "What makes streaming feel fast?"), (2, "And then?")] {
            watch_first_text(&client, turn).await?;
            let sent = Instant::now();
            if turn == 1 {
                chat_uis::send(&client, prompt).await?;
            } else {
                chat_uis::send_with_enter(&client, prompt).await?;
            }
            let reply = chat_uis::wait_reply(&client, turn, WAIT).await?;
            let took = sent.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(reply.state, "done", "{kind:?} turn {turn}: {reply:?}");
            assert_eq!(reply.text, text::answer(TOKENS), "{kind:?} turn {turn}");
            // The user's message and the reply, per turn.
            assert_eq!(reply.messages, 2 * turn, "{kind:?} turn {turn}: {reply:?}");
            // Never complete before the server's schedule lets it be, and the first text
            // never shown before the first token is due.
            assert!(took >= REPLY_MS, "{kind:?} turn {turn}: {took:.0} ms");
            let first = first_text_ms(&client).await?;
            assert!(
                first >= TTFT_MS,
                "{kind:?} turn {turn}: first text {first:.1} ms"
            );
        }
        anyhow::Ok(())
    }
    .await;
    let _ = client.close().await;
    result
}

/// Before turn `n` is sent: notes the page's clock and watches the message list for the
/// moment reply `n` first shows text (the test's observer, not the page's code).
async fn watch_first_text(client: &Client, n: usize) -> anyhow::Result<()> {
    client
        .execute(
            "const n = arguments[0];
             window.chatWatch = { start: performance.now(), first: null };
             // The body, not the list: a React app may not have rendered its list yet.
             const seen = () => {
               const r = document.querySelectorAll('#messages .assistant')[n - 1];
               if (r && r.textContent.length > 0 && window.chatWatch.first === null) {
                 window.chatWatch.first = performance.now();
                 observer.disconnect();
               }
             };
             const observer = new MutationObserver(seen);
             observer.observe(document.body, { childList: true, subtree: true, characterData: true });",
            vec![Value::from(n)],
        )
        .await?;
    Ok(())
}

/// Milliseconds from [`watch_first_text`] to the reply's first text, on the page's clock.
async fn first_text_ms(client: &Client) -> anyhow::Result<f64> {
    let v = client
        .execute(
            "const w = window.chatWatch; return w.first === null ? null : w.first - w.start;",
            vec![],
        )
        .await?;
    v.as_f64()
        .ok_or_else(|| anyhow::anyhow!("the observer saw no text: {v}"))
}

async fn eventsource(engine: Engine) -> anyhow::Result<()> {
    two_turns(Kind::EventSource, engine).await
}

async fn xhr(engine: Engine) -> anyhow::Result<()> {
    two_turns(Kind::Xhr, engine).await
}

async fn websocket(engine: Engine) -> anyhow::Result<()> {
    two_turns(Kind::WebSocket, engine).await
}

async fn react_openai(engine: Engine) -> anyhow::Result<()> {
    two_turns(Kind::ReactOpenAi, engine).await
}

async fn react_ai_sdk(engine: Engine) -> anyhow::Result<()> {
    two_turns(Kind::ReactAiSdk, engine).await
}

engines!(eventsource);
engines!(xhr);
engines!(websocket);
engines!(react_openai);
engines!(react_ai_sdk);

/// A stream the server refuses (HTTP 500 before the stream; for the socket, its
/// handshake) shows as a failed reply in every fixture, not as an endless "streaming",
/// and the page takes the next prompt.
async fn a_refused_stream_is_a_failed_reply(engine: Engine) -> anyhow::Result<()> {
    let browser = Browser::start(engine)?;
    let client = browser.session().await?;
    let result = async {
        for kind in Kind::ALL {
            let ui = ChatUi::serve(kind)?;
            client.goto(&ui.page_url("default", "fail=500")).await?;
            chat_uis::send(&client, "hello?").await?;
            let reply = chat_uis::wait_reply(&client, 1, WAIT).await?;
            assert_eq!(reply.state, "error", "{kind:?}: {reply:?}");
            assert!(reply.error.is_some(), "{kind:?}: {reply:?}");
        }
        anyhow::Ok(())
    }
    .await;
    let _ = client.close().await;
    result
}

engines!(a_refused_stream_is_a_failed_reply);
