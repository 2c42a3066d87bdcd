//! The test runners of docs/qa.md (issue #34) as a test uses them: a Node.js project in
//! a temp folder holding the probe package (copied, as `npm install` of its tarball would
//! put it) beside the runners `cargo xtask setup` installed (`@playwright/test`,
//! `playwright-core`, `puppeteer-core`, linked), and `node` run in a process group of its
//! own, so the browser it starts goes with it whatever happens.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::paths;
use crate::site::copy_dir;

/// The runners' pins: e2e/playwright/package.json's `devDependencies`, the versions
/// setup installs (an xtask test checks they agree).
fn pins() -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let manifest = paths::workspace_root().join("e2e/playwright/package.json");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)?;
    json["devDependencies"]
        .as_object()
        .cloned()
        .context("e2e/playwright/package.json has no devDependencies")
}

/// The `node_modules` of setup's install: `$TTFX_QA_RUNNERS_NODE_MODULES`, else the
/// prefix crates/xtask/src/paths.rs names by the pins.
pub fn node_modules() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("TTFX_QA_RUNNERS_NODE_MODULES") {
        return Ok(PathBuf::from(path));
    }
    let pins = pins()?;
    let pin = |name: &str| pins.get(name).and_then(|v| v.as_str()).unwrap_or("?");
    let prefix = format!(
        "qa-runners-playwright-{}-puppeteer-core-{}",
        pin("@playwright/test"),
        pin("puppeteer-core")
    );
    crate::paths::installed_node_modules(&prefix, pins.keys().map(String::as_str))
}

/// A project folder in the temp dir, removed when dropped.
pub struct Project {
    pub dir: PathBuf,
}

impl Project {
    /// `source` (a folder of the workspace, e.g. e2e/playwright) copied to a fresh
    /// folder, with `node_modules/ttfx-probe` the built package and every runner's
    /// package linked.
    pub fn new(source: &str) -> anyhow::Result<Project> {
        let dir = std::env::temp_dir().join(format!(
            "ttfx-qa-{}-{}",
            source.replace('/', "-"),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let project = Project { dir };
        copy_dir(&paths::workspace_root().join(source), &project.dir)?;
        let modules = project.dir.join("node_modules");
        copy_dir(&paths::probe_pkg()?, &modules.join("ttfx-probe"))?;
        for entry in std::fs::read_dir(node_modules()?)? {
            let entry = entry?;
            let name = entry.file_name();
            if name == "ttfx-probe" || name == ".bin" || name.to_string_lossy().starts_with('.') {
                continue;
            }
            // The linked packages resolve each other from their own folder; the package
            // copied here resolves `@playwright/test` through these links, to the one
            // copy the spec imports (Playwright refuses two).
            std::os::unix::fs::symlink(entry.path(), modules.join(&name))
                .with_context(|| format!("cannot link {}", entry.path().display()))?;
        }
        Ok(project)
    }

    /// `node ARGS` in the project, with `env`, in a process group of its own that is
    /// killed whole when it ends or after `limit` (its browser included).
    pub fn node(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        limit: Duration,
    ) -> anyhow::Result<Output> {
        use std::os::unix::process::CommandExt;
        let out_path = self.dir.join(".node-stdout");
        let err_path = self.dir.join(".node-stderr");
        let mut child = Command::new("node")
            .args(args)
            .current_dir(&self.dir)
            .envs(env.iter().copied())
            // Nothing may fetch a browser: the runners are told, whatever they find.
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
            .env("PUPPETEER_SKIP_DOWNLOAD", "1")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_path)?)
            .stderr(std::fs::File::create(&err_path)?)
            .process_group(0)
            .spawn()
            .context("cannot start node")?;
        let group = child.id();
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        // The group goes either way: a browser the runner left behind must not pile up.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{group}")])
            .stderr(Stdio::null())
            .status();
        let _ = child.wait();
        let read = |p: &Path| std::fs::read(p).unwrap_or_default();
        let (stdout, stderr) = (read(&out_path), read(&err_path));
        match status {
            Some(status) => Ok(Output {
                status,
                stdout,
                stderr,
            }),
            None => bail!(
                "node {} still running after {} s: killed\n--- stdout\n{}\n--- stderr\n{}",
                args.join(" "),
                limit.as_secs(),
                String::from_utf8_lossy(&stdout),
                String::from_utf8_lossy(&stderr)
            ),
        }
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
