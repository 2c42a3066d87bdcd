//! `ttfx`: the native side of ttfx. `main` only parses the command line and dispatches;
//! each command lives in its own crate (docs/architecture.md).

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod load_cmd;

/// A command that has no exit code of its own: 0, or its typed error to print.
fn done(r: Result<(), impl Into<anyhow::Error>>) -> anyhow::Result<ExitCode> {
    r.map(|()| ExitCode::SUCCESS).map_err(Into::into)
}

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Serve(args) => done(ttfx_serve::run(args)),
        cli::Command::Decode(args) => done(ttfx_report::decode_cmd::run(args)),
        // `report` exits 1 when a --budget failed, as `run` does.
        cli::Command::Report(args) => ttfx_report::report_cmd::run(args).map_err(Into::into),
        cli::Command::Field(args) => done(ttfx_collect::field_cmd::run(args)),
        cli::Command::Import(args) => done(ttfx_collect::import_cmd::run(args)),
        // `run` decides its own code (1: a budget failed); an error is still 2.
        cli::Command::Run(args) => ttfx_run::run(args).map_err(Into::into),
        cli::Command::Load(args) => load_cmd::run(*args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // One line a person can act on; the chain of causes joined with ": ".
            // Errors quote what was read (a page's, a file's, a database's strings):
            // their control characters are shown, not obeyed by the terminal.
            eprintln!(
                "ttfx: {}",
                ttfx_core::printable::escape_controls(&format!("{e:#}"))
            );
            ExitCode::from(2)
        }
    }
}
