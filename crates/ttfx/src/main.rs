//! `ttfx`: the native side of ttfx. `main` only parses the command line and dispatches.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod decode_cmd;
mod report_cmd;
mod serve;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Serve(args) => serve::run(args),
        cli::Command::Decode(args) => decode_cmd::run(args),
        cli::Command::Report(args) => report_cmd::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line a person can act on; the chain of causes joined with ": ".
            eprintln!("ttfx: {e:#}");
            ExitCode::from(2)
        }
    }
}
