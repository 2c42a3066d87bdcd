//! How long `ingest::parse` takes on hostile bodies of growing size (issue #30 point 1):
//! `cargo run -p ttfx-collect --example ingest_cost --release`. Each line: the body, its
//! size, the time; a linear parser's time doubles with the size.

use std::time::Instant;

/// A body's shape: its name and how to make it of about `n` bytes.
type Shape = (&'static str, fn(usize) -> String);

fn main() {
    let shapes: [Shape; 5] = [
        ("tiny documents `1\\n`", |n| "1\n".repeat(n / 2)),
        ("tiny objects `{}\\n`", |n| "{}\n".repeat(n / 3)),
        ("deep nesting `[[[…`", |n| "[".repeat(n)),
        ("one long string", |n| {
            format!("{{\"kind\":\"{}\"}}", "a".repeat(n))
        }),
        ("many keys", |n| {
            let mut s = String::from("{\"kind\":\"field\",\"schema_version\":1");
            while s.len() < n {
                s.push_str(&format!(",\"k{}\":0", s.len()));
            }
            s.push('}');
            s
        }),
    ];
    for (name, make) in shapes {
        for kib in [16usize, 64, 128, 1024] {
            let body = make(kib * 1024);
            let start = Instant::now();
            let result = ttfx_collect::ingest::parse(&body, 0.0);
            let took = start.elapsed();
            println!(
                "{name:24} {kib:5} KiB  {:9.3} ms  {}",
                took.as_secs_f64() * 1000.0,
                if result.is_ok() {
                    "accepted"
                } else {
                    "refused"
                }
            );
        }
    }
}
