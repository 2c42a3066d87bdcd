//! A simulated TTS endpoint inside the test page: a `ReadableStream` of real, non-silent
//! PCM16 (a 440 Hz tone) whose chunks are enqueued on timers with an injected time to
//! first audio and real-time factor.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::rc::Rc;

use gloo_timers::future::TimeoutFuture;
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use web_sys::{ReadableStream, ReadableStreamDefaultController};

/// What the simulated synthesizer does.
#[derive(Debug, Clone, Copy)]
pub struct SimTts {
    /// Wait before the first chunk, from the moment the stream is created.
    pub ttfa_ms: u32,
    /// Wall seconds per audio second after the first chunk (> 1: slower than real time).
    pub rtf: f64,
    /// Audio per chunk.
    pub chunk_ms: u32,
    pub chunks: u32,
    pub sample_rate: u32,
}

impl SimTts {
    pub fn samples_per_chunk(&self) -> usize {
        (self.sample_rate * self.chunk_ms / 1000) as usize
    }

    /// PCM16 little-endian bytes of chunk `k`: a continuous cosine at 0.3 of full scale,
    /// so the very first sample of the stream is audible (cos 0 = 1).
    pub fn chunk_bytes(&self, k: u32) -> Vec<u8> {
        let n = self.samples_per_chunk();
        let first = k as usize * n;
        (first..first + n)
            .flat_map(|i| {
                let t = i as f64 / f64::from(self.sample_rate);
                let s = (0.3 * (2.0 * std::f64::consts::PI * 440.0 * t).cos() * 32767.0) as i16;
                s.to_le_bytes()
            })
            .collect()
    }

    /// The stream, and the page times at which its chunks were actually enqueued
    /// (filled as it runs). Chunk 0 is enqueued `ttfa_ms` after this call; chunk k ≥ 1 is
    /// enqueued `chunk_ms × rtf` after chunk k − 1 was (timers chained from the actual
    /// enqueue, so a late timer delays everything after it and the stream is never
    /// faster than the injected RTF).
    pub fn stream(self) -> (ReadableStream, Rc<RefCell<Vec<f64>>>) {
        let enqueued: Rc<RefCell<Vec<f64>>> = Rc::default();
        let slot: Rc<RefCell<Option<ReadableStreamDefaultController>>> = Rc::default();
        let source = Object::new();
        let start = {
            let slot = Rc::clone(&slot);
            Closure::once_into_js(move |controller: ReadableStreamDefaultController| {
                *slot.borrow_mut() = Some(controller);
            })
        };
        Reflect::set(&source, &"start".into(), &start).unwrap();
        let stream = ReadableStream::new_with_underlying_source(&source).unwrap();
        let controller = slot
            .borrow_mut()
            .take()
            .expect("start runs in the constructor");
        let record = Rc::clone(&enqueued);
        wasm_bindgen_futures::spawn_local(async move {
            TimeoutFuture::new(self.ttfa_ms).await;
            for k in 0..self.chunks {
                if k > 0 {
                    TimeoutFuture::new((f64::from(self.chunk_ms) * self.rtf).round() as u32).await;
                }
                let bytes = Uint8Array::from(self.chunk_bytes(k).as_slice());
                record.borrow_mut().push(page_now());
                controller.enqueue_with_chunk(&bytes).unwrap();
            }
            controller.close().unwrap();
        });
        (stream, enqueued)
    }
}

pub fn page_now() -> f64 {
    web_sys::window().unwrap().performance().unwrap().now()
}

/// Prints a figure to the test output (wasm-bindgen-test shows console.log).
pub fn report(label: &str, value: impl std::fmt::Debug) {
    web_sys::console::log_1(&format!("[audio figures] {label}: {value:?}").into());
}
