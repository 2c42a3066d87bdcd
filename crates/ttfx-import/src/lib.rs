//! Benchmark result files of other tools, and of ttfx itself, read into one shape
//! ([`BenchRun`]): the tool and its version, the model, the load, completed and failed
//! requests, and TTFT, ITL, TPOT and end-to-end latency at p50/p90/p95/p99 in ms. One
//! reader for `ttfx import`, the collector and the lab page (it builds for wasm).
//!
//! - model.rs      the one shape
//! - sniff.rs      the tool, recognised from the first document's keys
//! - formats/      one module per tool: its documents → runs
//! - number.rs     numbers as the tools write them (`"inf"`, integers, null)
//! - nonfinite.rs  Python's bare `NaN` / `Infinity` tokens made readable
//! - source.rs     a file read once: hashed (SHA-256) and counted as it streams
//!
//! Files can be hundreds of MB: every format is read as a stream of typed documents
//! whose unneeded members are skipped, never as a JSON tree. What arrives is hostile:
//! damaged or unknown content is an [`ImportError`] naming the file and what was tried,
//! never a panic.
//!
//! It depends on ttfx-core only (its percentile rule and the run report's schema); it
//! must not depend on the collector, the server or anything of the browser.

use std::io::{self, Read};
use std::path::Path;

mod formats;
mod model;
pub mod nonfinite;
pub mod number;
mod sniff;
mod source;

pub use model::{BenchRun, Figures, Imported, Load, Metric, Origin, Percentiles, Tool};
pub use sniff::Shape;

/// Why a file could not be imported; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: io::Error,
    },
    #[error("{file}: not JSON: {detail}")]
    NotJson { file: String, detail: String },
    #[error(
        "{file}: not a benchmark file ttfx knows: tried {tried} (its keys: {keys}); `--format` names the tool when you know it"
    )]
    Unknown {
        file: String,
        tried: String,
        keys: String,
    },
    #[error("{file}: read as {tool}, but {detail}")]
    Damaged {
        file: String,
        tool: &'static str,
        detail: String,
    },
}

/// Reads the file at `path`. `format` forces a tool instead of recognising it.
pub fn read_path(path: &Path, format: Option<Tool>) -> Result<Imported, ImportError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let open = || std::fs::File::open(path);
    let mut file = read_with(&path.display().to_string(), open, format)?;
    file.file_name = name;
    Ok(file)
}

/// Reads a file already in memory (the lab page's dropped file).
pub fn read_bytes(name: &str, bytes: &[u8], format: Option<Tool>) -> Result<Imported, ImportError> {
    read_with(name, || Ok(bytes), format)
}

/// Sniffs (one partial read), then reads the whole file once with the tool's reader,
/// hashing it as it goes.
fn read_with<R: Read>(
    name: &str,
    mut open: impl FnMut() -> io::Result<R>,
    format: Option<Tool>,
) -> Result<Imported, ImportError> {
    let io_error = |source| ImportError::Io {
        file: name.to_owned(),
        source,
    };
    let tool = match format {
        Some(tool) => tool,
        None => {
            let input = open().map_err(io_error)?;
            let input = io::BufReader::new(nonfinite::NonFiniteTokens::new(input));
            match sniff::sniff(input, formats::recognise) {
                sniff::Sniffed::Tool(tool) => tool,
                sniff::Sniffed::Unknown(shape) => {
                    return Err(ImportError::Unknown {
                        file: name.to_owned(),
                        tried: Tool::ALL.map(Tool::name).join(", "),
                        keys: shape.key_list(),
                    });
                }
                sniff::Sniffed::NotJson(detail) => {
                    return Err(ImportError::NotJson {
                        file: name.to_owned(),
                        detail,
                    });
                }
            }
        }
    };
    let mut source = source::Source::new(open().map_err(io_error)?);
    let damaged = |detail: String| ImportError::Damaged {
        file: name.to_owned(),
        tool: tool.name(),
        detail,
    };
    let runs = {
        let input = io::BufReader::new(nonfinite::NonFiniteTokens::new(&mut source));
        formats::read(tool, input).map_err(damaged)?
    };
    source.drain().map_err(io_error)?;
    if runs.is_empty() {
        return Err(damaged("it holds no benchmark run".into()));
    }
    Ok(Imported {
        file_name: name.to_owned(),
        sha256: source.sha256_hex(),
        bytes: source.byte_count(),
        tool,
        runs,
    })
}
