//! `ttfx serve`: the lab page, the simulated endpoints and (later) the vantage proxy.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::{Context, bail};
use axum::Router;
use axum::response::Html;
use axum::routing::get;
use tower_http::services::{ServeDir, ServeFile};

use crate::cli::ServeArgs;

mod sim;

/// Runs the server until the process is stopped.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(args))
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let app = router(args.dist.as_deref())?;
    let listener = bind(args.addr).await?;
    let local = listener
        .local_addr()
        .context("cannot read the bound address")?;
    // Tests and scripts read this exact line to learn the chosen port.
    println!("ttfx serve: listening on http://{local}/");
    axum::serve(listener, app).await.context("server stopped")
}

async fn bind(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::AddrInUse => " (port taken: pick another with --addr)",
            std::io::ErrorKind::PermissionDenied => " (pick a port above 1024 with --addr)",
            _ => "",
        };
        anyhow::anyhow!("cannot listen on {addr}: {e}{hint}")
    })
}

/// The whole HTTP surface of `ttfx serve`.
pub fn router(dist: Option<&Path>) -> anyhow::Result<Router> {
    let app = Router::new().nest("/sim", sim::router());
    Ok(match dist {
        Some(dir) => {
            let index = dir.join("index.html");
            if !index.is_file() {
                bail!(
                    "--dist {}: no index.html there (build the lab page with `cargo xtask lab`)",
                    dir.display()
                );
            }
            app.fallback_service(ServeDir::new(dir).fallback(ServeFile::new(index)))
        }
        None => app.route("/", get(no_lab_page)),
    })
}

async fn no_lab_page() -> Html<&'static str> {
    Html(
        "<!doctype html><title>ttfx</title><p>ttfx serve is running without a lab page. \
         Build and serve it with <code>cargo xtask lab</code>, or pass <code>--dist</code>.</p>",
    )
}
