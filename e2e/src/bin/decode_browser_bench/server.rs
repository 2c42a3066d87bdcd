//! The bench page's loopback server: folders mounted under URL prefixes (the page, the
//! probe package, eventsource-parser), cross-origin isolated so the page clock steps in
//! µs where the engine allows it, and `no-store` so a fresh session's first call fetches
//! and compiles each decoder as a first visit would (no HTTP or code cache).

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::Response;

/// URL prefix (`/pkg/`) → folder.
pub type Mounts = Vec<(&'static str, PathBuf)>;

/// Starts the server on an ephemeral loopback port; returns its base URL (`http://…/`).
/// It stops with the bench's runtime.
pub async fn start(mounts: Mounts) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = Router::new().fallback(file).with_state(Arc::new(mounts));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(format!("http://{addr}/"))
}

async fn file(State(mounts): State<Arc<Mounts>>, uri: Uri) -> Response {
    let Some(path) = resolve(&mounts, uri.path()) else {
        return status(StatusCode::NOT_FOUND);
    };
    match tokio::fs::read(&path).await {
        Ok(bytes) => Response::builder()
            .header(header::CONTENT_TYPE, content_type(&path))
            .header(header::CACHE_CONTROL, "no-store")
            .header("cross-origin-opener-policy", "same-origin")
            .header("cross-origin-embedder-policy", "require-corp")
            .body(Body::from(bytes))
            .unwrap_or_default(),
        Err(_) => status(StatusCode::NOT_FOUND),
    }
}

fn status(code: StatusCode) -> Response {
    Response::builder()
        .status(code)
        .body(Body::empty())
        .unwrap_or_default()
}

/// The file a URL path names: under the mount of its longest prefix, with no `..` or
/// root component (a path that leaves its folder is not found).
fn resolve(mounts: &Mounts, path: &str) -> Option<PathBuf> {
    let (prefix, dir) = mounts
        .iter()
        .filter(|(prefix, _)| path.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())?;
    let rest = Path::new(&path[prefix.len()..]);
    if !rest.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(dir.join(rest))
}

/// The types the page loads; a module script and `instantiateStreaming` need the right
/// ones.
fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json" | "map") => "application/json",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_in_their_mount() {
        let mounts: Mounts = vec![("/", "/page".into()), ("/pkg/", "/built".into())];
        assert_eq!(
            resolve(&mounts, "/pkg/analysis/a.js"),
            Some("/built/analysis/a.js".into())
        );
        assert_eq!(resolve(&mounts, "/x.html"), Some("/page/x.html".into()));
        assert_eq!(resolve(&mounts, "/pkg/../secret"), None);
        assert_eq!(resolve(&mounts, "//etc/passwd"), None);
    }
}
