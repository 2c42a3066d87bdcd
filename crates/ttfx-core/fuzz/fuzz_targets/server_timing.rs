//! The Server-Timing header parser on arbitrary text: no panic, and every metric it
//! keeps has a non-empty token name.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ttfx_core::decode::server_timing_header::parse_headers;

fuzz_target!(|input: &[u8]| {
    let text = String::from_utf8_lossy(input);
    let parsed = parse_headers(text.split('\n'));
    for timing in &parsed.timings {
        assert!(!timing.name.is_empty());
        assert!(timing.duration_ms.is_none_or(f64::is_finite));
    }
});
