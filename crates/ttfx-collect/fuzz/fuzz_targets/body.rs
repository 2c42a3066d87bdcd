//! The collector's body reader on arbitrary text, as `POST /collect` hands it over: no
//! panic, and a body it accepts gives at least one row, each of which can be stored and
//! passes the plausibility rules (a sample rate in [1e-6, 1] among them).

#![no_main]

use libfuzzer_sys::fuzz_target;
use ttfx_collect::ingest::parse;
use ttfx_collect::plausible;

fuzz_target!(|input: &[u8]| {
    // The HTTP layer refuses a body that is not UTF-8 before the reader sees it.
    let Ok(body) = std::str::from_utf8(input) else {
        return;
    };
    if let Ok(rows) = parse(body, 1.7e12) {
        assert!(!rows.is_empty(), "an accepted body stores nothing");
        for row in &rows {
            assert!(row.received_unix_ms.is_finite());
            serde_json::to_string(&row.report).expect("an accepted report serializes");
            assert_eq!(plausible::check(&row.report), Ok(()), "an accepted run is implausible");
        }
    }
});
