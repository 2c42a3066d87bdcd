//! `cargo xtask bench`: figures, printed. Later issues add their own sections here.

use std::path::Path;
use std::process::Command;

use anyhow::Context;

use crate::lab::build_lab_page;
use crate::{cmd, paths, setup};

/// `cargo xtask bench [SECTION]`: every section but the opt-in ones, or one section.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    section: Option<Section>,
}

#[derive(Debug, clap::Subcommand)]
enum Section {
    /// Each milestone against an independent witness, per engine: first byte against
    /// the engine's network record and the server's send (Chromium, Firefox, WebKit),
    /// first paint against the page's frames (Chromium), first audio against the sound
    /// server (Chromium, Firefox; WebKit's context does not run here).
    Fidelity {
        /// Runs per engine and case.
        #[arg(long, default_value_t = 100)]
        runs: usize,
    },
    /// `ttfx import`'s reader on two generated ~200 MB files with per-request values
    /// (GuideLLM and vLLM layouts): MB/s and peak memory (#29: ≥ 100 MB/s, peak well
    /// under the file's size).
    Import,
    /// `ttfx serve --collect` under open-loop load (#31): the highest beacon rate at
    /// p99 ≤ 20 ms for 60 s, p50/p99 at 2,000/s, CPU per beacon, bytes per run; with a
    /// million runs stored, the reads and `ttfx field` timed, and ingest while they run.
    /// Release builds; about 12 minutes.
    Collect {
        /// Short windows, for development: the figures are not the headline.
        #[arg(long)]
        quick: bool,
    },
    /// `ttfx load`'s generator (#33): the highest open-loop rate it holds against the
    /// simulator (`ttfx serve` in its own process) with its own lateness p99 ≤ 2 ms, from
    /// a ladder of rates; then a five-step `ttfx run --sweep` with two browsers per step,
    /// timed against its steps' durations. Release builds; about two minutes after the
    /// build.
    Load {
        /// Shorter steps, for development.
        #[arg(long)]
        quick: bool,
    },
    /// The probe's analysis against npm eventsource-parser + JSON.parse (a TextDecoder +
    /// split + JSON.parse loop for NDJSON) on the main thread of one page per engine
    /// (#35): OpenAI chat, Anthropic and Ollama bodies of 2,000 and 50,000 events in 1 KiB
    /// chunks; MB/s of each, their ratio, a reply's first-call and warm cost; a Chromium
    /// CPU profile of the analysis. About five minutes.
    DecodeBrowser {
        /// Alternating rounds per body (three times as many at 2,000 events).
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// Comma-separated engines: chromium, firefox, webkit (default all).
        #[arg(long)]
        engines: Option<String>,
    },
    /// The lazy analysis's size budget, its options (#35 point 5): the analysis built
    /// with ttfx-core at each `opt-level` (the rest of it at the probe profile's `"z"`),
    /// each one's gzip size and `decode-browser`'s figures in Chromium, then one table.
    /// Opt-in (not part of plain `bench`): five builds and five Chromium runs, about five
    /// minutes (measured: 189 s with the first build done).
    AnalysisOptions {
        /// Alternating rounds per body (three times as many at 2,000 events).
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Comma-separated ttfx-core opt-levels (0, 1, 2, 3, s, z).
        #[arg(long, default_value = crate::bench_decode_browser::DEFAULT_LEVELS)]
        levels: String,
    },
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    match args.section {
        Some(Section::Fidelity { runs }) => fidelity(runs),
        Some(Section::Import) => import(),
        Some(Section::Collect { quick }) => collect_load(quick),
        Some(Section::Load { quick }) => load_generator(quick),
        Some(Section::DecodeBrowser {
            rounds,
            ref engines,
        }) => crate::bench_decode_browser::run(rounds, engines.as_deref()),
        Some(Section::AnalysisOptions { rounds, ref levels }) => {
            crate::bench_decode_browser::options(rounds, levels)
        }
        None => all(),
    }
}

/// The fidelity benches (`e2e/src/bin/{first_byte,paint,audio}_bench.rs`, docs/fidelity.md),
/// with the probe package and `ttfx` built here.
fn fidelity(runs: usize) -> anyhow::Result<()> {
    setup::ensure(setup::BENCH_TOOLS)?;
    let pkg = crate::probe_pkg::build()?;
    let runs = runs.to_string();
    for bench in ["first_byte_bench", "paint_bench", "audio_bench"] {
        e2e_bench(bench, &["--runs", &runs], &pkg)?;
    }
    Ok(())
}

/// Runs one of the e2e crate's bench binaries (their browsers found as the e2e tests find
/// them), with `ttfx` (built here) and the probe package `pkg`.
fn e2e_bench(bin: &str, args: &[&str], pkg: &Path) -> anyhow::Result<()> {
    let ttfx = crate::lab::build_ttfx()?;
    cmd::run(
        Command::new("cargo")
            .current_dir(paths::root())
            .args([
                "run", "--quiet", "--locked", "-p", "ttfx-e2e", "--bin", bin, "--",
            ])
            .args(args)
            .env("TTFX_BIN", ttfx)
            .env("TTFX_PROBE_PKG", pkg)
            .env("CHROMEDRIVER", crate::setup::CHROMEDRIVER),
    )
}

fn all() -> anyhow::Result<()> {
    decode_throughput()?;
    serve_concurrency()?;
    setup::ensure(setup::BENCH_TOOLS)?;
    build_lab_page(true)?;
    size_table("lab page size (release)", &paths::lab_dist(), &[])?;
    let pkg = crate::probe_pkg::build()?;
    size_table(
        "probe package, up front: the front a chat page loads before it measures \
         (#15: at most 12 KB gzip)",
        &pkg,
        &["voice", "analysis", "inject.js"],
    )?;
    // Not up front: only `ttfx run --inject` adds it, to a page that has no probe.
    let inject = pkg.join("inject.js");
    println!(
        "\n## `ttfx run --inject`'s preload script (the front, every transport, a recording \
         analysis; never loaded by a page that embeds the probe): {}",
        inject.display()
    );
    println!("{:<52} {:>10} {:>10}", "file", "raw B", "gzip -9 B");
    println!(
        "{:<52} {:>10} {:>10}",
        "inject.js",
        std::fs::metadata(&inject)?.len(),
        crate::gzip_size::of(&inject)?
    );
    size_table(
        "probe package, the analysis loaded lazily into a Worker (`analysis/`; #15: at \
         most 70 KB gzip)",
        &pkg.join("analysis"),
        &[],
    )?;
    size_table(
        "probe package, voice build (`ttfx-probe/voice`; loads ../probe.js too)",
        &pkg.join("voice"),
        &[],
    )?;
    probe_size_breakdown()?;
    probe_cost(&pkg)?;
    crate::bench_decode_browser::run(7, None)
}

/// Where the analysis wasm's bytes go, by area, from twiggy on a wasm-bindgen build that
/// keeps function names (the shipped package drops them), and how much of it the shared
/// ttfx-core analysis alone takes (the `analysis_only` example: decode, timeline,
/// metrics, report JSON, no browser code).
fn probe_size_breakdown() -> anyhow::Result<()> {
    let (Some(twiggy), Some(bindgen)) =
        (setup::tool_path("twiggy"), setup::tool_path("wasm-bindgen"))
    else {
        println!("twiggy is not installed; `cargo install twiggy` to see the breakdown");
        return Ok(());
    };
    let wasm = crate::probe_pkg::compile_analysis()?;
    let out = paths::target().join("probe-pkg-names");
    cmd::run(
        Command::new(&bindgen)
            .args(["--target", "web", "--out-dir"])
            .arg(&out)
            .arg(&wasm),
    )?;
    let csv = Command::new(&twiggy)
        .args(["top", "-n", "1000000", "-f", "csv"])
        .arg(out.join("ttfx_analysis_bg.wasm"))
        .output()
        .context("cannot run twiggy")?;
    let csv = String::from_utf8_lossy(&csv.stdout);
    println!(
        "\n## where the analysis wasm's bytes go (twiggy, names kept; raw bytes, by the \
         crate that owns each function: generic code counts where it is defined)"
    );
    let mut areas: Vec<(&str, u64)> = AREAS.iter().map(|(name, _)| (*name, 0)).collect();
    let mut total = 0;
    for line in csv.lines().skip(1) {
        let Some((name, size)) = twiggy_row(line) else {
            continue;
        };
        // The name section is not shipped (the package strips it).
        if name.contains("function names") {
            continue;
        }
        total += size;
        let area = AREAS
            .iter()
            .position(|(_, patterns)| patterns.iter().any(|p| name.contains(p)))
            .unwrap_or(AREAS.len() - 1);
        areas[area].1 += size;
    }
    areas.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
    for (name, size) in areas {
        let share = 100.0 * size as f64 / total.max(1) as f64;
        println!("{name:<58} {size:>8} B {share:>5.1} %");
    }
    println!("{:<58} {total:>8} B", "total (code + data)");

    let floor = paths::target().join("probe-analysis-only");
    crate::probe_pkg::bindgen(&crate::probe_pkg::compile_example("analysis_only")?, &floor)?;
    size_table(
        "the shared analysis alone (ttfx-core decode + timeline + metrics + report JSON, \
         no browser code; example analysis_only)",
        &floor,
        &[],
    )
}

/// Areas of the probe's wasm, each with the name fragments that place an item in it; the
/// first match wins, the last area takes the rest.
const AREAS: &[(&str, &[&str])] = &[
    ("static data (strings, number tables)", &["data segment"]),
    (
        "float <-> text (core fmt/parse, zmij)",
        &["flt2dec", "dec2flt", "fmt::float", "zmij"],
    ),
    (
        "report JSON (serde_json + derived Serialize)",
        &["serde_json", "Serialize", "serialize"],
    ),
    (
        "frame JSON parser (decode::json)",
        &["ttfx_core::decode::json"],
    ),
    (
        "ttfx-core decode (framing, dialects)",
        &["ttfx_core::decode"],
    ),
    (
        "ttfx-core timeline, recorder, metrics, report",
        &["ttfx_core"],
    ),
    (
        "analysis: its JS face (ttfx-analysis)",
        &["ttfx_analysis", "analysis_"],
    ),
    (
        "wasm-bindgen, js-sys, web-sys, futures",
        &[
            "wasm_bindgen",
            "js_sys",
            "web_sys",
            "futures",
            "__wbindgen",
            "__wbg",
        ],
    ),
    (
        "allocator (talc; dlmalloc elsewhere)",
        &["talc", "dlmalloc"],
    ),
    (
        "Rust core/alloc/std (fmt, collections, panics, str)",
        &[
            "core[", "core::", "alloc[", "alloc::", "std[", "std::", "<str", "<char", "<[",
            "__rust",
        ],
    ),
    ("other", &[]),
];

/// (name, shallow size) of one twiggy CSV row; the name is quoted and may hold commas.
fn twiggy_row(line: &str) -> Option<(&str, u64)> {
    let (name, rest) = if let Some(quoted) = line.strip_prefix('"') {
        let end = quoted.rfind("\",")?;
        (&quoted[..end], &quoted[end + 2..])
    } else {
        line.split_once(',')?
    };
    let size = rest.split(',').next()?.parse().ok()?;
    Some((name, size))
}

/// The probe's main-thread cost and its effect on the app, in headless Chromium.
fn probe_cost(pkg: &Path) -> anyhow::Result<()> {
    e2e_bench("probe_bench", &[], pkg)
}

/// Native decode throughput (MB/s, events/s) for OpenAI-style SSE, one token per event.
/// Release profile, so the same optimisation level (`opt-level = "s"`) the probe ships.
fn decode_throughput() -> anyhow::Result<()> {
    println!("\n## decode throughput (native, release)");
    cmd::run(Command::new("cargo").current_dir(paths::root()).args([
        "run",
        "--quiet",
        "--release",
        "-p",
        "ttfx-core",
        "--example",
        "decode_bench",
    ]))
}

/// The benchmark reader's speed and memory (`crates/ttfx-import/examples/import_bench.rs`;
/// its files are generated once into the target folder).
fn import() -> anyhow::Result<()> {
    println!("\n## ttfx import: reading ~200 MB benchmark files (release, median of 3)");
    cmd::run(Command::new("cargo").current_dir(paths::root()).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "ttfx-import",
        "--example",
        "import_bench",
    ]))?;
    let release = paths::target().join("release");
    cmd::run(
        Command::new(release.join("examples").join("import_bench"))
            .arg(paths::target().join("bench-import")),
    )
}

/// The collector's load bench (`e2e/src/bin/collect_load.rs`): `ttfx` and the
/// generator built in release together (one feature set, so neither rebuilds the
/// other's dependencies), the generator in its own process, the databases in the target
/// folder (on disk, as a collector's would be; removed at the end).
fn collect_load(quick: bool) -> anyhow::Result<()> {
    cmd::run(Command::new("cargo").current_dir(paths::root()).args([
        "build",
        "--quiet",
        "--locked",
        "--release",
        "-p",
        "ttfx",
        "-p",
        "ttfx-e2e",
        "--bin",
        "ttfx",
        "--bin",
        "collect_load",
    ]))?;
    let release = paths::target().join("release");
    let mut load = Command::new(release.join("collect_load"));
    load.arg("--dir")
        .arg(paths::target().join("bench-collect"))
        .env("TTFX_BIN", release.join("ttfx"));
    if quick {
        load.arg("--quick");
    }
    cmd::run(&mut load)
}

/// The load generator's bench (`crates/ttfx-load/examples/load_bench.rs`): `ttfx` and
/// the bench built in release together, the server a process of its own so the
/// generator's two cores are not also the server's threads' queue.
fn load_generator(quick: bool) -> anyhow::Result<()> {
    cmd::run(Command::new("cargo").current_dir(paths::root()).args([
        "build",
        "--quiet",
        "--locked",
        "--release",
        "-p",
        "ttfx",
        "-p",
        "ttfx-load",
        "--bin",
        "ttfx",
        "--example",
        "load_bench",
    ]))?;
    let release = paths::target().join("release");
    let mut bench = Command::new(release.join("examples").join("load_bench"));
    bench.arg(release.join("ttfx"));
    if quick {
        bench.arg("--quick");
    }
    cmd::run(&mut bench)?;
    crate::bench_sweep::sweep_timing(&release, quick)
}

/// `ttfx serve` under concurrent SSE streams: the injected TTFT's lateness at 100 and
/// 1,000 streams and how many streams it holds. Release build of the server and of the
/// raw-socket client (`crates/ttfx/examples/serve_bench.rs`), loopback only.
fn serve_concurrency() -> anyhow::Result<()> {
    println!("\n## ttfx serve: concurrent streams (release, loopback)");
    cmd::run(Command::new("cargo").current_dir(paths::root()).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "ttfx",
        "--bin",
        "ttfx",
        "--example",
        "serve_bench",
    ]))?;
    let release = paths::target().join("release");
    cmd::run(Command::new(release.join("examples").join("serve_bench")).arg(release.join("ttfx")))
}

/// Raw and gzip -9 size of every wasm and JS file in `dir` and its subfolders, but for
/// the subfolders in `skip`.
fn size_table(title: &str, dir: &Path, skip: &[&str]) -> anyhow::Result<()> {
    println!("\n## {title}: {}", dir.display());
    println!("{:<52} {:>10} {:>10}", "file", "raw B", "gzip -9 B");
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.retain(|f| !skip.iter().any(|s| f.starts_with(dir.join(s))));
    files.sort();
    let (mut raw_total, mut gz_total) = (0, 0);
    for path in files {
        let raw = std::fs::metadata(&path)?.len();
        let gz = crate::gzip_size::of(&path)?;
        raw_total += raw;
        gz_total += gz;
        let name = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        println!("{name:<52} {raw:>10} {gz:>10}");
    }
    println!("{:<52} {raw_total:>10} {gz_total:>10}", "total");
    Ok(())
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("wasm" | "js")
        ) {
            out.push(path);
        }
    }
    Ok(())
}
