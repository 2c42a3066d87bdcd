//! The benchmark reader on arbitrary bytes, recognised or forced to each tool: no
//! panic, and whatever it accepts has finite figures and a run.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ttfx_import::{Metric, Tool, read_bytes};

fuzz_target!(|input: &[u8]| {
    let forced = Tool::ALL.map(Some);
    for format in std::iter::once(None).chain(forced) {
        if let Ok(file) = read_bytes("fuzz.json", input, format) {
            assert!(!file.runs.is_empty());
            for run in &file.runs {
                for m in Metric::ALL {
                    if let Some(f) = run.metric(m) {
                        assert!(f.values.iter().all(|v| v.is_finite()));
                    }
                }
            }
        }
    }
});
