//! `ttfx run`: the headless QA runner. It serves its own page (or opens the user's),
//! drives headless Chromium over WebDriver through N runs at concurrency C, collects the
//! probe's reports from `window.__ttfx`, prints percentiles, judges budgets and exits
//! 0 (all budgets met), 1 (a budget failed) or 2 (the run could not be made).
//!
//! It serves its page with `ttfx serve`'s router (ttfx-serve), drives browsers through
//! ttfx-webdriver, makes inject mode's reports with ttfx-analysis and prints tables with
//! ttfx-report; no server crate depends on it, and it must not reach into the servers'
//! internals (it uses ttfx-serve's router and config, ttfx-proxy's upstream list).
//!
//! Its errors are its own enums: [`RunError`] names why a run could not be made (the
//! scenario refused, the site, the browsers' setup, the browser, a run, an output); each
//! text carries its cause, so `ttfx` prints it once.

use std::process::ExitCode;
use std::time::Instant;

use ttfx_core::report::{BatchReport, Run};

mod args;
mod background_load;
mod bidi_network;
mod chain;
mod driver;
mod error;
mod flow;
mod ground_truth;
mod inject;
mod junit;
mod load_level;
mod measure;
mod output;
mod record_join;
mod report_pages;
mod scenario;
mod session_truth;
mod setup_error;
pub mod site;
mod sweep;
mod sweep_output;
mod url_match;

// Budgets are ttfx-report's (`ttfx report --budget` judges the same way); the runner's
// modules name them as `budget::…`.
pub use ttfx_report::budget;

pub use args::RunArgs;
pub use driver::{Browser, EndpointError};
pub use error::{Cause, OutputError, RunError};
pub use flow::{FlowError, FlowProblem};
pub use inject::InjectVia;
pub use scenario::ScenarioError;
pub use setup_error::SetupError;

/// The first SIGINT (Ctrl-C), SIGTERM or SIGHUP (the terminal closed, an SSH session
/// dropped), by name: each stops the browsers the same way.
async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) {
        (Ok(mut int), Ok(mut term), Ok(mut hup)) => tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
        },
        // No signal handling here: never resolves, the run goes on.
        _ => std::future::pending().await,
    }
}

/// The shell's exit code for a process a signal ended: 128 + its number.
fn signal_exit_code(signal: &str) -> u8 {
    match signal {
        "SIGHUP" => 129,
        "SIGINT" => 130,
        _ => 143,
    }
}

pub fn run(args: Box<RunArgs>) -> Result<ExitCode, RunError> {
    stop_browsers_on_panic();
    // Everything that can be wrong with the input is found before a browser starts.
    let scenario = scenario::Scenario::from_args(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    if let Some(plan) = scenario.load.clone() {
        return run_under_load(&args, &scenario, &plan, &runtime);
    }
    let started = Instant::now();
    let mut measured = match runtime.block_on(measure_until_stopped(&scenario, &args)) {
        Ok(measured) => measured?,
        Err(signal) => return Ok(stopped_by(signal)),
    };
    let seconds = started.elapsed().as_secs_f64();
    let batches = batches(&scenario, std::mem::take(&mut measured.runs));
    let verdicts = verdicts(&scenario, &batches);
    report(&args, &scenario, &batches, &verdicts, &measured, seconds)?;
    Ok(exit_code(&verdicts))
}

/// `--under-load` / `--sweep`: every step measured, its table printed, `--json` the
/// sweep document, `--junit` a suite per step; exit 1 when a budget fails at any step.
fn run_under_load(
    args: &RunArgs,
    scenario: &scenario::Scenario,
    plan: &load_level::LoadPlan,
    runtime: &tokio::runtime::Runtime,
) -> Result<ExitCode, RunError> {
    let steps = runtime.block_on(async {
        tokio::select! {
            steps = sweep::run_steps(scenario, args, plan, |runs| batches(scenario, runs)) => Ok(steps),
            signal = stop_signal() => Err(signal),
        }
    });
    let (steps, sandbox) = match steps {
        Ok(steps) => steps?,
        Err(signal) => return Ok(stopped_by(signal)),
    };
    let verdicts = sweep_output::verdicts(&steps, &scenario.budgets);
    let table = sweep_output::render(plan, &steps, &verdicts, scenario.voice);
    print!("{}", ttfx_core::printable::escape_controls(&table));
    if let Some(sandbox) = &sandbox {
        println!("sandbox: {}", sandbox.describe());
    }
    if let Some(path) = &args.json {
        sweep_output::write_json(path, &sweep_output::json(plan, &steps, &verdicts)?)?;
    }
    if let Some(path) = &args.junit {
        let names: Vec<String> = steps
            .iter()
            .map(|s| {
                let label = s.batches.first().map_or("", |(l, _)| l.as_str());
                format!("{label} at {}", s.level.label())
            })
            .collect();
        let suites: Vec<junit::Suite<'_>> = steps
            .iter()
            .zip(&verdicts)
            .zip(&names)
            .map(|((s, v), name)| junit::Suite {
                name,
                verdicts: v,
                seconds: s.seconds,
            })
            .collect();
        std::fs::write(path, junit::render(&suites)).map_err(|cause| OutputError::Write {
            path: path.clone(),
            cause,
        })?;
    }
    let headings = report_pages::step_headings(&steps);
    report_pages::write(
        args,
        &report_pages::step_sections(&steps, &verdicts, &headings),
    )?;
    let all: Vec<budget::Verdict> = verdicts.into_iter().flatten().collect();
    Ok(exit_code(&all))
}

/// A panic anywhere, even with `panic = "abort"`, first stops the browsers.
fn stop_browsers_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        ttfx_webdriver::kill_all();
        previous(info);
    }));
}

/// The measured runs, or the signal that stopped them first. On Ctrl-C, SIGTERM or SIGHUP
/// mid-run the measuring future is dropped (its drivers with it, each killing its
/// browsers).
async fn measure_until_stopped(
    scenario: &scenario::Scenario,
    args: &RunArgs,
) -> Result<Result<measure::MeasuredRuns, RunError>, &'static str> {
    tokio::select! {
        measured = measure::measure(scenario, args) => Ok(measured),
        signal = stop_signal() => Err(signal),
    }
}

/// After a stop signal: every driver still registered is killed, and the exit code is
/// the shell's for that signal.
fn stopped_by(signal: &'static str) -> ExitCode {
    ttfx_webdriver::kill_all();
    eprintln!("ttfx run: stopped by {signal}; its browsers and drivers are stopped");
    ExitCode::from(signal_exit_code(signal))
}

/// Each target's runs as a batch, labelled, with the goodput budgets' thresholds.
fn batches(scenario: &scenario::Scenario, runs: Vec<Vec<Run>>) -> Vec<(String, BatchReport)> {
    let goodput: Vec<_> = scenario
        .budgets
        .iter()
        .filter_map(budget::RunBudget::goodput_budget)
        .collect();
    scenario
        .targets
        .iter()
        .zip(runs)
        .map(|(t, runs): (_, Vec<Run>)| {
            (t.label().to_owned(), BatchReport::from_runs(runs, &goodput))
        })
        .collect()
}

/// Budgets gate the target under test (the first); `--against` is the comparison.
fn verdicts(
    scenario: &scenario::Scenario,
    batches: &[(String, BatchReport)],
) -> Vec<budget::Verdict> {
    match batches.first() {
        Some((_, batch)) => scenario
            .budgets
            .iter()
            .map(|b| b.judge(&batch.statistics))
            .collect(),
        None => Vec::new(),
    }
}

/// The table on stdout, then `--json`, `--junit`, `--html` and `--summary-md` when asked
/// for.
fn report(
    args: &RunArgs,
    scenario: &scenario::Scenario,
    batches: &[(String, BatchReport)],
    verdicts: &[budget::Verdict],
    measured: &measure::MeasuredRuns,
    seconds: f64,
) -> Result<(), OutputError> {
    let (ground_truth, speech) = (&measured.ground_truth, measured.speech.as_ref());
    let sandbox = measured.sandbox.as_ref();
    // Pages chose some of its strings (request URLs, reply elements): a terminal shows
    // their control characters instead of obeying them.
    let table = output::render(batches, verdicts, ground_truth, speech, scenario.warmup);
    print!("{}", ttfx_core::printable::escape_controls(&table));
    if let Some(sandbox) = sandbox {
        println!("sandbox: {}", sandbox.describe());
    }
    if let Some(path) = &args.json {
        output::write_json(path, batches, ground_truth, speech, sandbox)?;
    }
    if let Some(path) = &args.junit {
        let name = batches.first().map_or("", |(l, _)| l.as_str());
        let xml = junit::render(&[junit::Suite {
            name,
            verdicts,
            seconds,
        }]);
        std::fs::write(path, xml).map_err(|cause| OutputError::Write {
            path: path.clone(),
            cause,
        })?;
    }
    report_pages::write(args, &report_pages::sections(batches, verdicts))
}

/// 1 when a budget failed (said on stderr), else success.
fn exit_code(verdicts: &[budget::Verdict]) -> ExitCode {
    let failed = verdicts.iter().filter(|v| !v.passed).count();
    if failed > 0 {
        eprintln!("ttfx run: {failed} of {} budget(s) failed", verdicts.len());
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario_of(args: &[&str]) -> Result<(RunArgs, scenario::Scenario), RunError> {
        use clap::Parser;
        /// `ttfx run`'s options alone, as the binary's command line embeds them.
        #[derive(Parser)]
        struct Run {
            #[command(flatten)]
            args: RunArgs,
        }
        let run = Run::try_parse_from(["ttfx run"].iter().chain(args)).expect("flags parse");
        let scenario = scenario::Scenario::from_args(&run.args)?;
        Ok((*Box::new(run.args), scenario))
    }

    #[test]
    fn load_flags_make_a_plan_for_endpoints_and_are_refused_for_pages() {
        let (_, scenario) = scenario_of(&[
            "--target",
            "sim/default",
            "--sweep",
            "concurrency=1,4",
            "--step-duration-s",
            "2",
        ])
        .expect("a scenario");
        let plan = scenario.load.expect("a plan");
        assert_eq!(plan.levels.len(), 2);
        assert_eq!(plan.duration, std::time::Duration::from_secs(2));
        let refused = |args: &[&str]| match scenario_of(args) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{args:?} was accepted"),
        };
        let e = refused(&["--url", "http://127.0.0.1:9/chat", "--under-load", "rate=5"]);
        assert!(e.contains("is a page"), "{e}");
        let e = refused(&["--target", "sim/default", "--under-load", "users=5"]);
        assert!(e.contains("write rate=R"), "{e}");
        let e = refused(&[
            "--target",
            "sim/default",
            "--under-load",
            "rate=5",
            "--step-warmup-s=-1",
        ]);
        assert!(e.contains("--step-warmup-s"), "{e}");
    }

    #[test]
    fn a_password_in_the_target_url_reaches_no_report_table_or_junit() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let url = "http://alice:s3cret@127.0.0.1:9/v1/chat/completions?key=k3y";
        let (_, scenario) = scenario_of(&[
            "--target",
            url,
            "--budget",
            "ttft.p50<=1ms",
            "--budget",
            "ttft.p50<=100s",
        ])
        .expect("a scenario");
        let label = scenario.targets[0].label().to_owned();
        assert_eq!(label, "http://127.0.0.1:9/v1/chat/completions");
        let report = measure::tests::page_report_of(url);
        let run = measure::to_run(&report, None, "r1", &label).expect("a run");
        assert_eq!(
            run.timeline.request.url.as_deref(),
            Some("http://127.0.0.1:9/v1/chat/completions")
        );
        let batches = batches(&scenario, vec![vec![run]]);
        let verdicts = verdicts(&scenario, &batches);
        assert_eq!(verdicts.len(), 2);
        let json = dir.path().join("report.json");
        output::write_json(&json, &batches, &[], None, None).expect("--json");
        let written = [
            output::render(&batches, &verdicts, &[], None, 0),
            std::fs::read_to_string(&json).expect("the report"),
            junit::render(&[junit::Suite {
                name: &batches[0].0,
                verdicts: &verdicts,
                seconds: 1.0,
            }]),
        ];
        for text in &written {
            assert!(text.contains("127.0.0.1:9"), "{text}");
            for secret in ["alice", "s3cret", "k3y"] {
                assert!(!text.contains(secret), "{secret} in {text}");
            }
        }
        // What goes to stderr: a refused scenario names the target by its label, and a
        // Grid's password stays out of the WebDriver errors.
        let same = scenario_of(&["--target", url, "--against", url]).expect_err("refused");
        let remote =
            driver::Endpoint::remote("https://alice:s3cret@grid:4444/wd", Browser::Chromium)
                .err()
                .expect("refused");
        for e in [format!("{same:#}"), format!("{remote:#}")] {
            assert!(e.contains("127.0.0.1:9") || e.contains("grid:4444"), "{e}");
            assert!(!e.contains("alice") && !e.contains("s3cret"), "{e}");
        }
    }

    #[test]
    fn a_page_whose_reply_element_and_url_clear_the_screen_prints_them_escaped() {
        use ttfx_core::selection::{ReplyChoice, Selection, StreamChoice};
        let (_, scenario) = scenario_of(&["--target", "http://127.0.0.1:9/v1/chat/completions"])
            .expect("a scenario");
        let report = measure::tests::page_report_of("http://h/\x1b[2J\u{9b}31m\x07");
        let mut run = measure::to_run(&report, None, "r1", "t").expect("a run");
        run.timeline.selection = Some(Selection {
            stream: StreamChoice::FirstStreamingAfterSubmit,
            requests_seen: 1,
            reply: ReplyChoice::Selector,
            reply_element: Some("div\r\n#fake-line\x1b]52;c;cGF3bmVk\x07".to_owned()),
            reply_share: None,
            flow_turn: None,
            probe: None,
        });
        let batches = batches(&scenario, vec![vec![run]]);
        let table = output::render(&batches, &[], &[], None, 0);
        assert!(
            table.contains(r"reply   div\r\n#fake-line\x1b]52;c;cGF3bmVk\x07, the --reply element"),
            "{table}"
        );
        assert!(table.contains(r"http://h/\x1b[2J\u{9b}31m\x07"), "{table}");
        // What `ttfx run` prints: the table through the same escape, no control left.
        let printed = ttfx_core::printable::escape_controls(&table);
        assert!(
            !printed.contains(['\x1b', '\x07', '\r', '\u{9b}']),
            "{printed}"
        );
        assert!(
            !printed.lines().any(|l| l.starts_with("#fake-line")),
            "{printed}"
        );
    }
}
