//! The simulated LLM endpoints: the request is planned, held for the queue, answered
//! with headers that carry the measured queue, then streamed by a task that sleeps to
//! each absolute deadline and writes the dialect's bytes.

use axum::response::Response;
use serde_json::Value;
use tokio::time::Instant;
use ttfx_core::server_timing::Usage;

use ttfx_core::ChatApi;

use super::deadline;
use super::dialect::{Ctx, Encoder, End, ServerSide};
use super::profile::Failure;
use super::rng::Rng;
use super::schedule::{self, Plan};
use super::sink::{Gone, Sink, body_channel};
use super::{Call, Refusal, json_error, text};
use crate::serve::records::{RecordHandle, RecordOutcome, lock};

pub async fn handle(api: ChatApi, call: Call) -> Response {
    let parsed = match call.parse() {
        Ok(p) => p,
        Err(Refusal(status, message)) => {
            return json_error(status, &api.error_body(status.as_u16(), &message));
        }
    };
    let p = &parsed.profile;
    let prompt_tokens = text::estimate_prompt_tokens(&parsed.body);
    let request = schedule::Request {
        prompt_tokens,
        max_tokens: max_tokens(&parsed.body),
        reasoning_channel: api.has_reasoning_channel(),
    };
    let plan = schedule::plan(p, request, &mut Rng::new(parsed.seed));

    let front = match call
        .hold(&parsed, api.dialect(), |code, m| api.error_body(code, m))
        .await
    {
        Ok(front) => front,
        Err(res) => return res,
    };
    let ctx = Ctx {
        model: body_model(&parsed.body).unwrap_or_else(|| format!("ttfx-sim-{}", call.profile)),
        request_id: call.arrival.id.clone(),
        created_unix_s: (call.arrival.unix_ms / 1000.0) as u64,
        prompt_tokens,
        include_usage: parsed
            .body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    let (tx, body) = body_channel();
    let res = front.stream(api.content_type(), body);
    let sink = Sink::new(tx, p.delivery, front.record.clone());
    let job = Job {
        plan,
        encoder: api.encoder(ctx),
        arrival: call.arrival.at,
        queue_end: front.queue_end,
        failure: p.failure,
        prompt_tokens,
        record: front.record,
    };
    tokio::spawn(job.run(sink));
    res
}

/// The client's output limit, in any dialect's spelling.
fn max_tokens(body: &Value) -> Option<usize> {
    [
        "/max_tokens",
        "/max_completion_tokens",
        "/max_output_tokens",
        "/options/num_predict",
        "/n_predict",
    ]
    .iter()
    .find_map(|p| body.pointer(p).and_then(Value::as_u64))
    .map(|n| n as usize)
}

fn body_model(body: &Value) -> Option<String> {
    body.get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty() && m.len() <= 200)
        .map(str::to_owned)
}

struct Job {
    plan: Plan,
    encoder: Box<dyn Encoder>,
    arrival: Instant,
    queue_end: Instant,
    failure: Option<Failure>,
    prompt_tokens: usize,
    record: RecordHandle,
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
        deadline::until(self.arrival + self.plan.prefill_end).await;
        let prefill_end = Instant::now();
        let mut last = prefill_end;
        for step in self.plan.steps.by_ref() {
            deadline::until(self.arrival + step.at).await;
            last = Instant::now();
            let bytes = self.encoder.piece(step.channel, &step.text);
            sink.emit(bytes.as_bytes()).await?;
        }
        if let Some(at) = self.plan.steps.cut {
            deadline::until(self.arrival + at).await;
            let message = "ttfx sim: injected failure mid-stream";
            lock(&self.record).error = Some(message.into());
            if self.failure == Some(Failure::Drop) {
                return Ok(Ending::Drop);
            }
            sink.emit(self.encoder.error(message).as_bytes()).await?;
            return Ok(Ending::InBandError);
        }
        // Hidden reasoning at the end of the plan still takes its time.
        deadline::until(self.arrival + self.plan.steps.last_at).await;
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
