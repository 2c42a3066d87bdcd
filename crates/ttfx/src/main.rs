//! `ttfx`: the native side of ttfx. `main` only parses the command line and dispatches.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod collect;
mod decode_cmd;
mod field_cmd;
mod report_cmd;
mod run_cmd;
mod serve;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let done = |r: anyhow::Result<()>| r.map(|()| ExitCode::SUCCESS);
    let result = match cli.command {
        cli::Command::Serve(args) => done(serve::run(args)),
        cli::Command::Decode(args) => done(decode_cmd::run(args)),
        cli::Command::Report(args) => done(report_cmd::run(args)),
        cli::Command::Field(args) => done(field_cmd::run(args)),
        // `run` decides its own code (1: a budget failed); an error is still 2.
        cli::Command::Run(args) => run_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // One line a person can act on; the chain of causes joined with ": ".
            eprintln!("ttfx: {e:#}");
            ExitCode::from(2)
        }
    }
}
