//! `cargo xtask bench import`: the reader's speed and peak memory on two generated
//! files of about 200 MB with per-request values, one in GuideLLM's 0.4 layout and one
//! in vLLM's `--save-detailed` layout. Each read runs in a child process (this program,
//! `read PATH`) so its peak resident memory (`VmHWM`) is its own; three reads per file,
//! the median printed. Goals (issue #29): at least 100 MB/s on 2 cores, peak memory well
//! under the file's size.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const TARGET_BYTES: u64 = 200 * 1000 * 1000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("read") {
        return read(Path::new(&args[2]));
    }
    let dir = PathBuf::from(
        args.get(1)
            .cloned()
            .unwrap_or_else(|| "target/bench-import".into()),
    );
    std::fs::create_dir_all(&dir)?;
    let files = [
        (
            "guidellm 0.4 layout",
            dir.join("guidellm.json"),
            guidellm as fn(&mut dyn Write) -> std::io::Result<()>,
        ),
        ("vllm --save-detailed", dir.join("vllm.json"), vllm),
    ];
    println!(
        "{:<22} {:>9} {:>9} {:>8} {:>11} {:>9} {:>7}",
        "file", "MB", "requests", "s", "MB/s", "peak MB", "peak/size"
    );
    for (name, path, write) in files {
        if std::fs::metadata(&path).map_or(true, |m| m.len() < TARGET_BYTES) {
            let mut out = BufWriter::new(File::create(&path)?);
            write(&mut out)?;
            out.flush()?;
        }
        let size = std::fs::metadata(&path)?.len() as f64 / 1e6;
        let mut reads = Vec::new();
        for _ in 0..3 {
            let out = Command::new(std::env::current_exe()?)
                .arg("read")
                .arg(&path)
                .output()?;
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
            }
            let text = String::from_utf8(out.stdout)?;
            let f: Vec<f64> = text
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            reads.push((f[0], f[1], f[2]));
        }
        reads.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (secs, peak_kb, requests) = reads[1];
        let peak = peak_kb / 1000.0;
        println!(
            "{name:<22} {size:>9.1} {requests:>9} {secs:>8.2} {:>11.1} {peak:>9.1} {:>6.0}%",
            size / secs,
            100.0 * peak / size
        );
    }
    Ok(())
}

/// One read: seconds, peak resident KiB·1.024 (VmHWM in kB), requests read.
fn read(path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let file = ttfx_import::read_path(path, None)?;
    let secs = start.elapsed().as_secs_f64();
    let requests: u64 = file.runs.iter().map(|r| r.completed + r.failed).sum();
    let status = std::fs::read_to_string("/proc/self/status")?;
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(f64::NAN);
    println!("{secs} {hwm} {requests}");
    Ok(())
}

/// A small deterministic generator (xorshift), so the files are the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// GuideLLM 0.4's report: one constant-rate benchmark whose every successful request
/// is kept, each with its timings, usage and output text (about 2.2 KB a request).
fn guidellm(out: &mut dyn Write) -> std::io::Result<()> {
    let n = 90_000;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    write!(
        out,
        r#"{{"args":{{"target":"http://127.0.0.1:8000","profile":"constant","rate":[16.0],"model":"bench-model"}},"benchmarks":[{{"type_":"generative_benchmark","config":{{"strategy":{{"type_":"constant","worker_count":10,"max_concurrency":512,"rate":16.0}},"backend":{{"model":"bench-model"}}}},"metrics":{{"request_totals":{{"successful":{n},"errored":0,"incomplete":0,"total":{n}}}}},"requests":{{"successful":["#
    )?;
    for i in 0..n {
        let t0 = 1.8e9 + i as f64 * 0.0625;
        let ttft = 40.0 + 200.0 * rng.next();
        let itl = 15.0 + 10.0 * rng.next();
        let tokens = 64 + (rng.next() * 192.0) as u64;
        let latency = (ttft + itl * (tokens - 1) as f64) / 1000.0;
        if i > 0 {
            out.write_all(b",")?;
        }
        write!(
            out,
            r#"{{"type_":"generative_request_stats","request_id":"{i:08x}-5e62-4f72-b20c-1cafa8f684ee","request_type":"chat_completions","request_args":"{{'headers': {{}}, 'params': {{}}, 'body': {{'model': 'bench-model', 'stream': True}}}}","output":"{}","info":{{"status":"completed","timings":{{"targeted_start":{t0},"queued":{t0},"dequeued":{t0},"scheduled_at":{t0},"resolve_start":{t0},"request_start":{t0},"first_request_iteration":{},"first_token_iteration":{},"last_token_iteration":{},"last_request_iteration":{},"request_iterations":{tokens},"token_iterations":{tokens},"request_end":{},"resolve_end":{},"finalized":{}}},"error":null}},"input_metrics":{{"text_tokens":512}},"output_metrics":{{"text_tokens":{tokens}}},"request_start_time":{t0},"request_end_time":{},"request_latency":{latency},"prompt_tokens":512,"output_tokens":{tokens},"total_tokens":{},"time_to_first_token_ms":{ttft},"time_per_output_token_ms":{},"inter_token_latency_ms":{itl},"tokens_per_second":{},"output_tokens_per_second":{}}}"#,
            "The caf\\u00e9 serves na\\u00efve G\\u00e4ste \\u65e5\\u672c\\u8336 ".repeat(20),
            t0 + 0.004,
            t0 + ttft / 1000.0,
            t0 + latency,
            t0 + latency + 0.001,
            t0 + latency + 0.002,
            t0 + latency + 0.003,
            t0 + latency + 0.004,
            t0 + latency + 0.002,
            512 + tokens,
            latency * 1000.0 / tokens as f64,
            (512 + tokens) as f64 / latency,
            tokens as f64 / latency,
        )?;
    }
    out.write_all(b"],\"errored\":[],\"incomplete\":[],\"total\":null}}]}")
}

/// vLLM's `--save-result --save-detailed`: per-request TTFT, every gap (seconds), the
/// generated texts and errors, then the summary keys.
fn vllm(out: &mut dyn Write) -> std::io::Result<()> {
    let n = 60_000;
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    write!(
        out,
        r#"{{"date":"20261204-120000","endpoint_type":"openai-chat","backend":"openai-chat","label":null,"model_id":"bench-model","tokenizer_id":"bench-model","num_prompts":{n},"request_rate":"inf","burstiness":1.0,"max_concurrency":64,"duration":600.5,"completed":{n},"failed":0,"input_lens":["#
    )?;
    for i in 0..n {
        write!(out, "{}{}", if i > 0 { ", " } else { "" }, 512)?;
    }
    out.write_all(b"], \"ttfts\": [")?;
    for i in 0..n {
        write!(
            out,
            "{}{}",
            if i > 0 { ", " } else { "" },
            0.04 + 0.2 * rng.next()
        )?;
    }
    out.write_all(b"], \"itls\": [")?;
    for i in 0..n {
        out.write_all(if i > 0 { b", [" } else { b"[" })?;
        let gaps = 50 + (rng.next() * 200.0) as usize;
        for g in 0..gaps {
            write!(
                out,
                "{}{}",
                if g > 0 { ", " } else { "" },
                0.015 + 0.01 * rng.next()
            )?;
        }
        out.write_all(b"]")?;
    }
    out.write_all(b"], \"generated_texts\": [")?;
    for i in 0..n {
        write!(
            out,
            "{}\"{}\"",
            if i > 0 { ", " } else { "" },
            "Caf\\u00e9 ".repeat(30)
        )?;
    }
    out.write_all(b"], \"errors\": [")?;
    for i in 0..n {
        out.write_all(if i > 0 { b", \"\"" } else { b"\"\"" })?;
    }
    out.write_all(b"], \"mean_ttft_ms\": 140.0, \"median_ttft_ms\": 140.0, \"p99_ttft_ms\": 238.0}")
}
