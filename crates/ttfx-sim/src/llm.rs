//! The simulated LLM endpoints: the request is planned, held for the queue, answered
//! with headers that carry the measured queue, then streamed by a task that takes its
//! place in the profile's batch (load.rs), sleeps to each absolute deadline and writes
//! the dialect's bytes.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use tokio::time::Instant;
use ttfx_core::server_timing::Usage;

use ttfx_core::ChatApi;

use super::dialect::{Ctx, Encoder, End, ServerSide};
use super::limits::{MAX_HELD_BYTES, MAX_REPLY_MS};
use super::load::{self, Admitted, Deployment};
use super::profile::{Delivery, Failure, Profile};
use super::rng::Rng;
use super::schedule::{self, Plan};
use super::sink::{Gone, Sink, body_channel};
use super::{Call, Refusal, json_error, text};
use ttfx_core::server_timing::{ServerTiming, TimingSource};
use ttfx_records::{RecordHandle, RecordOutcome, lock};

/// What an injected mid-stream failure says.
pub const INJECTED: &str = "ttfx sim: injected failure mid-stream";

pub async fn handle(api: ChatApi, mut call: Call) -> Response {
    let refuse = |Refusal(status, message): Refusal| {
        json_error(status, &api.error_body(status.as_u16(), &message))
    };
    let parsed = match call.parse() {
        Ok(p) => p,
        Err(refusal) => return refuse(refusal),
    };
    let p = &parsed.profile;
    let prompt_tokens = text::prompt_tokens(parsed.body.prompt_chars);
    let request = schedule::Request {
        prompt_tokens,
        max_tokens: parsed.body.max_tokens.map(|n| n as usize),
        reasoning_channel: api.has_reasoning_channel(),
    };
    let plan = schedule::plan(p, request, &mut Rng::new(parsed.seed));
    let model = parsed
        .body
        .model
        .clone()
        .filter(|m| !m.is_empty() && m.len() <= 200);
    let ctx = Ctx {
        model: model.unwrap_or_else(|| format!("ttfx-sim-{}", call.profile)),
        request_id: call.arrival.id.clone(),
        created_unix_s: (call.arrival.unix_ms / 1000.0) as u64,
        prompt_tokens,
        include_usage: parsed.body.include_usage,
    };
    let held = match check(p, &plan, || api.encoder(ctx.clone())) {
        Ok(held) => held,
        Err(refusal) => return refuse(refusal),
    };

    let front = match call
        .hold(&parsed, api.dialect(), |code, m| api.error_body(code, m))
        .await
    {
        Ok(front) => front,
        Err(res) => return res,
    };
    let (tx, body) = body_channel();
    let res = front.stream(api.content_type(), body);
    let mut sink = Sink::new(tx, p.delivery, front.record.clone());
    if let Some(bytes) = held {
        // The final event's measured figures may take a few more digits than planned.
        sink.reserve(bytes + 64);
    }
    let job = Job {
        plan,
        encoder: api.encoder(ctx),
        arrival: call.arrival.at,
        queue_end: front.queue_end,
        failure: p.failure,
        prompt_tokens,
        record: front.record,
        deployment: parsed.deployment.clone(),
        profile: p.clone(),
        running: None,
    };
    tokio::spawn(job.run(sink));
    res
}

/// The caps on the planned reply (`limits`): its length and, when it is buffered, the
/// bytes it holds (returned). Both come from the plan itself, before anything is sent.
fn check(
    p: &Profile,
    plan: &Plan,
    encoder: impl FnOnce() -> Box<dyn Encoder>,
) -> Result<Option<usize>, Refusal> {
    check_length(p, plan)?;
    if p.delivery == Delivery::Buffered {
        let bytes = planned_body_bytes(&mut *encoder(), plan, p.failure, MAX_HELD_BYTES);
        if bytes > MAX_HELD_BYTES {
            return Err(Refusal(
                StatusCode::BAD_REQUEST,
                format!(
                    "buffered=true: the planned body passes {MAX_HELD_BYTES} bytes, the cap on \
                 what a buffered reply may hold ({} tokens): lower output_tokens or \
                 reasoning_tokens, or stream it",
                    plan.reasoning_tokens + plan.visible_tokens
                ),
            ));
        }
        return Ok(Some(bytes));
    }
    Ok(None)
}

/// The cap on the planned reply's length ([`MAX_REPLY_MS`]), from the plan itself; every
/// simulated chat reply meets it, whatever carries it (an HTTP body, a socket).
pub fn check_length(p: &Profile, plan: &Plan) -> Result<(), Refusal> {
    let end_ms = plan.steps.end().as_secs_f64() * 1000.0;
    if end_ms > MAX_REPLY_MS {
        let tokens = plan.reasoning_tokens + plan.visible_tokens;
        return Err(Refusal(
            StatusCode::BAD_REQUEST,
            format!(
                "the planned reply lasts {end_ms:.0} ms from arrival, above the cap of \
             {MAX_REPLY_MS:.0} ms per reply (first token at {:.0} ms, then {tokens} tokens at \
             tokens_per_second={}, {} stalls of stall_ms={:.0}): lower the delays, \
             output_tokens, reasoning_tokens or stall_ms, or raise tokens_per_second",
                plan.prefill_end.as_secs_f64() * 1000.0,
                p.tokens_per_second,
                plan.steps.stalls(),
                p.stall.as_secs_f64() * 1000.0,
            ),
        ));
    }
    Ok(())
}

/// The bytes of the planned reply, counted by encoding it as [`Job::produce`] will
/// (without waiting, nothing kept), stopping once past `cap`, so the count costs at most
/// `cap` bytes of encoding. The final event's measured figures may differ from the
/// planned ones here in their last digits.
fn planned_body_bytes(
    encoder: &mut dyn Encoder,
    plan: &Plan,
    failure: Option<Failure>,
    cap: usize,
) -> usize {
    let mut n = encoder.open().len();
    let mut steps = plan.steps.clone();
    for step in steps.by_ref() {
        n += encoder.piece(step.channel, &step.text).len();
        if n > cap {
            return n;
        }
    }
    if steps.cut.is_some() {
        if failure != Some(Failure::Drop) {
            n += encoder.error(INJECTED).len();
        }
        return n;
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let end = End {
        reasoning_tokens: plan.reasoning_tokens,
        visible_tokens: plan.visible_tokens,
        finish_reason: plan.finish_reason,
        queue_ms: 0.0,
        prefill_ms: ms(plan.prefill_end),
        decode_ms: ms(steps.last_at.saturating_sub(plan.prefill_end)),
        total_ms: ms(steps.last_at),
    };
    n + encoder.close(&end).len()
}

struct Job {
    plan: Plan,
    encoder: Box<dyn Encoder>,
    arrival: Instant,
    queue_end: Instant,
    failure: Option<Failure>,
    prompt_tokens: usize,
    record: RecordHandle,
    /// Where the stream takes its place in the batch, by the profile's load keys.
    deployment: Arc<Deployment>,
    profile: Profile,
    /// The stream's place once admitted: held until the job is dropped, after the last
    /// byte is handed over (a buffered body's included).
    running: Option<Admitted>,
}

enum Ending {
    Completed,
    InBandError,
    Drop,
}

impl Job {
    async fn run(mut self, mut sink: Sink) {
        match self.produce(&mut sink).await {
            Ok(Ending::Completed) => sink.finish(RecordOutcome::Completed).await,
            Ok(Ending::InBandError) => sink.finish(RecordOutcome::Failed).await,
            Ok(Ending::Drop) => sink.drop_connection().await,
            Err(Gone) => sink.gone(),
        }
    }

    async fn produce(&mut self, sink: &mut Sink) -> Result<Ending, Gone> {
        let open = self.encoder.open();
        if !open.is_empty() {
            sink.emit(open.as_bytes()).await?;
        }
        // After the headers: a wait for a slot is part of the time to first token, as
        // in a serving engine's waiting queue.
        let admitted = sink
            .unless_gone(self.deployment.admit(&self.profile))
            .await?;
        if load::llm_model_on(&self.profile) {
            report(&self.record, &admitted);
        }
        // Every deadline moves by the wait and the queue-depth term (zero without load:
        // the schedule is the profile's to the bit).
        let origin = self.arrival + admitted.shift();
        let running = self.running.insert(admitted);
        sink.until(origin + self.plan.prefill_end).await?;
        let prefill_end = Instant::now();
        let mut last = prefill_end;
        loop {
            // The batch as it is now, as the chunk before leaves, sets the next interval.
            self.plan.steps.set_slowdown(running.slowdown());
            let Some(step) = self.plan.steps.next() else {
                break;
            };
            sink.until(origin + step.at).await?;
            last = Instant::now();
            let bytes = self.encoder.piece(step.channel, &step.text);
            sink.emit(bytes.as_bytes()).await?;
        }
        if let Some(at) = self.plan.steps.cut {
            sink.until(origin + at).await?;
            lock(&self.record).error = Some(INJECTED.into());
            if self.failure == Some(Failure::Drop) {
                return Ok(Ending::Drop);
            }
            sink.emit(self.encoder.error(INJECTED).as_bytes()).await?;
            return Ok(Ending::InBandError);
        }
        // Hidden reasoning at the end of the plan still takes its time.
        sink.until(origin + self.plan.steps.last_at).await?;
        last = last.max(Instant::now());
        let ms = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64() * 1000.0;
        let end = End {
            reasoning_tokens: self.plan.reasoning_tokens,
            visible_tokens: self.plan.visible_tokens,
            finish_reason: self.plan.finish_reason,
            queue_ms: ms(self.arrival, self.queue_end),
            prefill_ms: ms(self.queue_end, prefill_end),
            decode_ms: ms(prefill_end, last),
            total_ms: ms(self.arrival, Instant::now()),
        };
        {
            let mut r = lock(&self.record);
            r.duration("prefill", end.prefill_ms);
            r.duration("decode", end.decode_ms);
            r.usage = Some(Usage {
                prompt_tokens: Some(self.prompt_tokens as u64),
                completion_tokens: Some(end.completion_tokens() as u64),
                reasoning_tokens: Some(end.reasoning_tokens as u64),
                cached_prompt_tokens: None,
            });
        }
        sink.emit(self.encoder.close(&end).as_bytes()).await?;
        Ok(Ending::Completed)
    }
}

/// What the record says about the stream's admission: `batch_wait` (ms waited for a
/// slot) among its durations, and `batch` (the streams running then, this one
/// included) among its server timings, as `Server-Timing` says a value that is not a
/// duration: in its description. The headers left before the admission, so the record
/// is where a client reads them.
fn report(record: &RecordHandle, admitted: &Admitted) {
    let mut r = lock(record);
    r.duration("batch_wait", admitted.wait.as_secs_f64() * 1000.0);
    r.header_timings.push(ServerTiming {
        name: "batch".into(),
        duration_ms: None,
        description: Some(admitted.batch().to_string()),
        source: TimingSource::InBand,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::builtin;

    fn ctx() -> Ctx {
        Ctx {
            model: "m".into(),
            request_id: "r".into(),
            created_unix_s: 0,
            prompt_tokens: 1,
            include_usage: true,
        }
    }

    fn plan_of(pairs: &[(&str, &str)]) -> (Profile, Plan) {
        let mut p = builtin()[0].1.clone();
        p.apply(pairs.iter().copied()).unwrap();
        let request = schedule::Request {
            prompt_tokens: 1,
            max_tokens: None,
            reasoning_channel: true,
        };
        let plan = schedule::plan(&p, request, &mut Rng::new(1));
        (p, plan)
    }

    fn checked(pairs: &[(&str, &str)]) -> Result<Option<usize>, String> {
        let (p, plan) = plan_of(pairs);
        check(&p, &plan, || ChatApi::OpenAiChat.encoder(ctx())).map_err(|Refusal(_, m)| m)
    }

    #[test]
    fn the_planned_length_is_capped_whatever_makes_it() {
        // First token at 599 s, the second 1 s later: exactly the cap.
        let at_cap = [
            ("ttft_ms", "599000"),
            ("output_tokens", "2"),
            ("tokens_per_second", "1"),
        ];
        checked(&at_cap).unwrap();
        let e = checked(&[
            ("ttft_ms", "599001"),
            ("output_tokens", "2"),
            ("tokens_per_second", "1"),
        ])
        .unwrap_err();
        assert!(
            e.contains("lasts 600001 ms") && e.contains("cap of 600000 ms"),
            "{e}"
        );
        // Many tokens at a slow rate, and many stalls, each within its own bound.
        let e =
            checked(&[("output_tokens", "100000"), ("tokens_per_second", "0.001")]).unwrap_err();
        assert!(
            e.contains("100000 tokens at tokens_per_second=0.001"),
            "{e}"
        );
        let every: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
        let every = every.join(",");
        let stalls = [
            ("output_tokens", "1000"),
            ("stall_at", every.as_str()),
            ("stall_ms", "601"),
        ];
        let e = checked(&stalls).unwrap_err();
        assert!(e.contains("1000 stalls of stall_ms=601"), "{e}");
        // Hidden reasoning takes its time too.
        let e = checked(&[
            ("reasoning_tokens", "100000"),
            ("reasoning", "hidden"),
            ("tokens_per_second", "100"),
        ])
        .unwrap_err();
        assert!(e.contains("100048 tokens"), "{e}");
    }

    #[test]
    fn a_buffered_body_is_counted_from_the_plan_and_capped() {
        let e = checked(&[
            ("buffered", "true"),
            ("output_tokens", "100000"),
            ("tokens_per_second", "100000"),
        ])
        .unwrap_err();
        assert!(
            e.contains("buffered=true") && e.contains("4194304 bytes"),
            "{e}"
        );
        let held = checked(&[("buffered", "true"), ("output_tokens", "10000")]).unwrap();
        assert!(
            held.is_some_and(|n| n > 10_000 * 100 && n < MAX_HELD_BYTES),
            "{held:?}"
        );
        assert_eq!(
            checked(&[("output_tokens", "10000")]).unwrap(),
            None,
            "streamed"
        );
        // The count is the bytes the reply sends: encode it as `Job::produce` does.
        for pairs in [
            &[("output_tokens", "30"), ("reasoning_tokens", "5")][..],
            &[
                ("output_tokens", "30"),
                ("fail", "error"),
                ("fail_after", "7"),
            ][..],
            &[("output_tokens", "30"), ("fail", "drop")][..],
        ] {
            let (p, plan) = plan_of(pairs);
            let mut encoder = ChatApi::OpenAiChat.encoder(ctx());
            let mut sent = encoder.open().len();
            let mut steps = plan.steps.clone();
            for step in steps.by_ref() {
                sent += encoder.piece(step.channel, &step.text).len();
            }
            let planned = planned_body_bytes(
                &mut *ChatApi::OpenAiChat.encoder(ctx()),
                &plan,
                p.failure,
                usize::MAX,
            );
            if steps.cut.is_some() {
                if p.failure == Some(Failure::InBand) {
                    sent += encoder.error(INJECTED).len();
                }
                assert_eq!(planned, sent, "{pairs:?}");
            } else {
                // The closing events carry measured figures: equal up to their digits.
                assert!(planned > sent && planned < sent + 400, "{pairs:?}");
            }
        }
    }
}
