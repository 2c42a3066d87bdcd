//! `ttfx load`'s one piece of wiring: a `sim/` or `proxy/` target is served by `ttfx
//! serve`'s router, started here on 127.0.0.1:0 (as `ttfx run` starts its own), since
//! ttfx-load only sees URLs and must not depend on the servers. The server runs on a
//! runtime and threads of its own, so its tasks never queue beside the generator's and
//! the generator's lateness stays its own.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use ttfx_load::{Command, LoadArgs};

/// Streams the local server lets run at once, and connections it serves: as many as
/// the largest closed loop (more open-loop streams wait in the kernel's backlog).
const LOCAL_LIMIT: u32 = ttfx_load::MAX_CONCURRENCY as u32;

pub fn run(args: LoadArgs) -> anyhow::Result<ExitCode> {
    // Every check of the arguments first: nothing listens for a command that is refused.
    let command = Command::from_args(&args)?;
    let base = match command.needs_local_server() {
        true => Some(start_local_server(command.config())?),
        false => None,
    };
    Ok(command.run(base.as_deref())?)
}

/// Starts the router on a loopback port in its own thread and runtime; its base URL.
/// It serves until the process ends.
fn start_local_server(config: Option<&Path>) -> anyhow::Result<String> {
    let config = match config {
        Some(path) => ttfx_serve::config::load(path)?,
        None => ttfx_serve::config::Config::default(),
    };
    let app = ttfx_serve::router(None, config, LOCAL_LIMIT)?;
    let app = ttfx_serve::with_body_timeout(
        app,
        std::time::Duration::from_millis(ttfx_serve::connections::DEFAULT_BODY_TIMEOUT_MS),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("ttfx-load-server")
        .build()
        .context("cannot start the local server's runtime")?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .context("cannot listen on 127.0.0.1")?;
    let addr = listener
        .local_addr()
        .context("cannot read the local server's address")?;
    std::thread::Builder::new()
        .name("ttfx-load-server".into())
        .spawn(move || {
            // An error here shows as failed requests in the report.
            let _ = runtime.block_on(ttfx_serve::connections::serve(
                listener,
                app,
                ttfx_serve::connections::ConnectionLimits {
                    max_connections: LOCAL_LIMIT,
                    head_timeout: std::time::Duration::from_millis(
                        ttfx_serve::connections::DEFAULT_HEAD_TIMEOUT_MS,
                    ),
                },
            ));
        })
        .context("cannot start the local server's thread")?;
    Ok(format!("http://{addr}"))
}
