//! The chat UI fixtures of e2e/chat-uis (issues #20 and #36): five real chat pages that
//! stream differently (EventSource, XMLHttpRequest, a WebSocket, a React app on the
//! official `openai` client, a React app on the Vercel AI SDK's `streamText`) and none of
//! which loads the probe. [`ChatUi::serve`] starts what one
//! needs: a `ttfx serve` for the API and a second `ttfx serve --dist` for the page, so the
//! page talks to an API of another origin as a deployed app does; [`send`] and
//! [`wait_reply`] drive the page over WebDriver.
//!
//! The page's query (e2e/chat-uis/README.md): `?api=http://127.0.0.1:PORT/sim/PROFILE`
//! and any simulator overrides (`&ttft_ms=300&output_tokens=12`), which the page passes
//! on with every request. [`ChatUi::page_url`] builds it.
//!
//! ```ignore
//! let ui = ChatUi::serve(Kind::WebSocket)?;
//! client.goto(&ui.page_url("default", "ttft_ms=300&output_tokens=12")).await?;
//! chat_uis::send(&client, "Hello").await?;
//! let reply = chat_uis::wait_reply(&client, 1, Duration::from_secs(20)).await?;
//! assert_eq!(reply.state, "done");
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use fantoccini::{Client, Locator};
use serde_json::Value;

use crate::site::copy_dir;
use crate::{ServeProcess, paths};

/// One fixture: its folder under e2e/chat-uis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `new EventSource(url)` on `GET …/v1/chat/completions?prompt=…`.
    EventSource,
    /// A POST with `XMLHttpRequest`, the SSE read from `responseText` as it grows.
    Xhr,
    /// One WebSocket to `…/v1/realtime`, Realtime-style events.
    WebSocket,
    /// A React app built by Vite, streaming through the `openai` npm client.
    ReactOpenAi,
    /// A React app built by Vite, streaming with the Vercel AI SDK (`streamText` of `ai`
    /// over `@ai-sdk/openai-compatible`).
    ReactAiSdk,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::EventSource,
        Kind::Xhr,
        Kind::WebSocket,
        Kind::ReactOpenAi,
        Kind::ReactAiSdk,
    ];

    /// Its folder under e2e/chat-uis.
    pub fn folder(self) -> &'static str {
        match self {
            Kind::EventSource => "eventsource",
            Kind::Xhr => "xhr",
            Kind::WebSocket => "websocket",
            Kind::ReactOpenAi => "react-openai",
            Kind::ReactAiSdk => "react-ai-sdk",
        }
    }
}

/// A fixture being served; both servers (and a built app's folder) go when it is dropped.
pub struct ChatUi {
    pub kind: Kind,
    /// The simulator the page streams from (`api.url`, ending in `/`).
    pub api: ServeProcess,
    /// The static server of the page, another origin (`pages.url`, ending in `/`).
    pub pages: ServeProcess,
    /// The React app's build folder, removed on drop.
    _built: Option<Built>,
}

impl ChatUi {
    /// Starts the API server, builds the page if it needs building (the React app, with
    /// Vite and the libraries `cargo xtask setup` installed: nothing is downloaded) and
    /// serves it from a second server.
    pub fn serve(kind: Kind) -> anyhow::Result<ChatUi> {
        let bin = paths::ttfx_bin()?;
        let api = ServeProcess::start(&bin, &[])?;
        let (dist, built) = match kind {
            Kind::ReactOpenAi | Kind::ReactAiSdk => {
                let built = Built::react_app(kind)?;
                (built.dist(), Some(built))
            }
            _ => (fixture_dir(kind), None),
        };
        let dist = dist
            .to_str()
            .context("the page's folder is not UTF-8")?
            .to_owned();
        let pages = ServeProcess::start(&bin, &["--dist", &dist])?;
        Ok(ChatUi {
            kind,
            api,
            pages,
            _built: built,
        })
    }

    /// The API base the page is given: `http://127.0.0.1:PORT/sim/PROFILE`.
    pub fn api_base(&self, profile: &str) -> String {
        format!("{}sim/{profile}", self.api.url)
    }

    /// The page, streaming from `profile` with `overrides` (`"ttft_ms=300&output_tokens=12"`,
    /// or empty) on every request.
    pub fn page_url(&self, profile: &str, overrides: &str) -> String {
        let mut url = format!("{}?api={}", self.pages.url, self.api_base(profile));
        if !overrides.is_empty() {
            url.push('&');
            url.push_str(overrides);
        }
        url
    }
}

/// The folder of a fixture in the source tree.
pub fn fixture_dir(kind: Kind) -> PathBuf {
    paths::workspace_root()
        .join("e2e/chat-uis")
        .join(kind.folder())
}

/// A build folder in the temp dir, removed when dropped.
struct Built(PathBuf);

impl Built {
    /// The React fixture `kind` (e2e/chat-uis/react-openai or react-ai-sdk) copied to a
    /// fresh folder, its `node_modules` a link to setup's install, built by Vite into
    /// `dist/`.
    fn react_app(kind: Kind) -> anyhow::Result<Built> {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ttfx-chat-ui-react-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let built = Built(dir);
        copy_dir(&fixture_dir(kind), &built.0)?;
        link_dir(
            &paths::chat_ui_node_modules(kind.folder())?,
            &built.0.join("node_modules"),
        )?;
        let out = Command::new("node")
            .arg(paths::vite()?)
            .args(["build", "--logLevel", "warn"])
            .current_dir(&built.0)
            .output()
            .context("cannot run node")?;
        if !out.status.success() {
            bail!(
                "vite build of {} failed:\n{}{}",
                kind.folder(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(built)
    }

    fn dist(&self) -> PathBuf {
        self.0.join("dist")
    }
}

impl Drop for Built {
    fn drop(&mut self) {
        // Removes the link, not the shared install it points to.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
fn link_dir(target: &Path, link: &Path) -> anyhow::Result<()> {
    std::os::unix::fs::symlink(target, link)
        .with_context(|| format!("cannot link {} to {}", link.display(), target.display()))
}

#[cfg(not(unix))]
fn link_dir(target: &Path, link: &Path) -> anyhow::Result<()> {
    Ok(copy_dir(target, link)?)
}

/// Types `text` into the page's `#prompt` and clicks `#send`.
pub async fn send(client: &Client, text: &str) -> anyhow::Result<()> {
    let prompt = wait_for(client, "#prompt").await?;
    prompt.send_keys(text).await?;
    client.find(Locator::Css("#send")).await?.click().await?;
    Ok(())
}

/// Types `text` into `#prompt` and presses Enter (the pages send on Enter too).
pub async fn send_with_enter(client: &Client, text: &str) -> anyhow::Result<()> {
    let prompt = wait_for(client, "#prompt").await?;
    prompt.send_keys(&format!("{text}\u{E007}")).await?;
    Ok(())
}

async fn wait_for(client: &Client, css: &str) -> anyhow::Result<fantoccini::elements::Element> {
    Ok(client
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css(css))
        .await?)
}

/// A reply as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// Its text (`textContent`).
    pub text: String,
    /// `streaming`, `done` or `error`.
    pub state: String,
    /// The page's message when it failed.
    pub error: Option<String>,
    /// Messages in the list (user and assistant), to check the turns' layout.
    pub messages: usize,
}

/// Waits until the page's `n`-th reply (1-based) is no longer `streaming` and returns it;
/// an error after `timeout`.
pub async fn wait_reply(client: &Client, n: usize, timeout: Duration) -> anyhow::Result<Reply> {
    let start = Instant::now();
    loop {
        let v = client
            .execute(
                "const replies = document.querySelectorAll('#messages .assistant');
                 const r = replies[arguments[0] - 1];
                 return r ? { text: r.textContent, state: r.dataset.state || '',
                              error: r.dataset.error || null,
                              messages: document.querySelectorAll('#messages .message').length }
                          : null;",
                vec![Value::from(n)],
            )
            .await?;
        if !v.is_null() && v["state"] != "streaming" {
            return Ok(Reply {
                text: v["text"].as_str().unwrap_or_default().to_owned(),
                state: v["state"].as_str().unwrap_or_default().to_owned(),
                error: v["error"].as_str().map(str::to_owned),
                messages: v["messages"].as_u64().unwrap_or(0) as usize,
            });
        }
        if start.elapsed() > timeout {
            bail!("reply {n} not finished within {timeout:?}: {v}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
