//! One module per tool: which keys tell it ([`recognise`]) and how its documents become
//! runs ([`read`]). Each reader takes the whole stream of documents, so JSON Lines
//! (vLLM's `--append-result`, SGLang's results, AIPerf's records) and a single document
//! go through the same code whatever the file is named.

use std::io::Read;

use serde::de::DeserializeOwned;

use crate::sniff::Shape;
use crate::{BenchRun, Tool};

mod aiperf;
mod genai_perf;
mod guidellm;
mod llmperf;
mod serving;
mod sglang;
mod stat_object;
mod ttfx;
mod vllm;

/// The tool whose keys these are. With `whole == false` only a key that one tool alone
/// writes decides (reading stops there); with `whole == true` the document's every
/// top-level key is in `shape`.
pub fn recognise(shape: &Shape, whole: bool) -> Option<Tool> {
    if ttfx::recognise(shape) {
        return Some(Tool::Ttfx);
    }
    if guidellm::recognise(shape) {
        return Some(Tool::Guidellm);
    }
    if llmperf::recognise(shape) {
        return Some(Tool::Llmperf);
    }
    if aiperf::recognise(shape) {
        return Some(Tool::Aiperf);
    }
    // GenAI-Perf's summary holds AIPerf's metric objects without AIPerf's own keys:
    // only the whole document tells it.
    if genai_perf::recognise(shape, whole) {
        return Some(Tool::GenaiPerf);
    }
    // vLLM and SGLang share their result keys (SGLang's script began as vLLM's): only a
    // key one of them alone writes tells them apart, so wait for the whole document
    // unless one is seen.
    if sglang::recognise(shape) {
        return Some(Tool::Sglang);
    }
    if vllm::recognise(shape, whole) {
        return Some(Tool::Vllm);
    }
    None
}

/// Every run of the file, read as `tool` writes it.
pub fn read<R: Read>(tool: Tool, input: R) -> Result<Vec<BenchRun>, String> {
    match tool {
        Tool::Vllm => vllm::read(input),
        Tool::Sglang => sglang::read(input),
        Tool::Aiperf => aiperf::read(input),
        Tool::GenaiPerf => genai_perf::read(input),
        Tool::Guidellm => guidellm::read(input),
        Tool::Llmperf => llmperf::read(input),
        Tool::Ttfx => ttfx::read(input),
    }
}

/// Each JSON document of the stream (one, or one per line), typed.
fn documents<T: DeserializeOwned, R: Read>(input: R) -> impl Iterator<Item = Result<T, String>> {
    serde_json::Deserializer::from_reader(input)
        .into_iter::<T>()
        .enumerate()
        .map(|(i, doc)| doc.map_err(|e| format!("document {}: {e}", i + 1)))
}

/// Seconds → ms, in place (a file's millions of gaps are not copied), NaN kept as NaN
/// (it has no rank).
fn ms(mut seconds: Vec<f64>) -> Vec<f64> {
    for s in &mut seconds {
        *s *= 1000.0;
    }
    seconds
}
