//! The server's record of a page's own request (#36): an injected page's request carries
//! no request id of the runner's, so the runner's page cannot ask for its record. When
//! the request reached `ttfx serve` (the simulator or the proxy), the response named its
//! record in `Server-Timing: ttfx-record;desc=ID` (ttfx-edge), the recorder kept the id
//! apart (`ServerData::record_id`, never written out), and here the runner reads
//! `ORIGIN/records/ID` natively and joins it, so the `gap.*` rows appear. Where it cannot,
//! the run says why in an anomaly (`no_server_record`).

use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use ttfx_core::report::Run;
use ttfx_core::server_record::ServerRecord;
use ttfx_core::timeline::Anomaly;

/// A record is a few KB; a reply of more is not one.
const MAX_RECORD_BYTES: usize = 4 << 20;
/// The record is ready when the stream ends; a server that takes longer is not answering.
const RECORD_TIMEOUT: Duration = Duration::from_secs(5);

/// The client the runner reads records with: ttfx-load's (http and https, the public
/// roots).
pub type RecordClient = ttfx_load::HttpClient;

/// `run` with its server record joined, or with an anomaly saying why there is none.
pub async fn join(run: Run, client: &RecordClient) -> Run {
    let has_server_account = !run.timeline.server.timings.is_empty();
    match fetch(&run, client).await {
        Ok(record) => match run.clone().with_server(&record.server) {
            Ok(joined) => joined,
            Err(e) => noted(
                run,
                format!("the server's record did not join the run: {e}"),
            ),
        },
        // A page whose server reports its own timings has its gaps without a record.
        Err(_) if has_server_account => run,
        Err(why) => noted(run, why),
    }
}

async fn fetch(run: &Run, client: &RecordClient) -> Result<ServerRecord, String> {
    let Some(id) = run.timeline.server.record_id.as_deref() else {
        return Err(
            "no server record: the page's request did not reach `ttfx serve` \
                    (its response named no ttfx-record in Server-Timing), so there are no \
                    gap rows"
                .to_owned(),
        );
    };
    let url = run
        .timeline
        .request
        .url
        .as_deref()
        .and_then(|u| url::Url::parse(u).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or("no server record: the request's URL is not an http(s) URL")?;
    // The id was checked plain (ttfx_core::recorder::plain_record_id): safe in a path.
    let records = url
        .join(&format!("/records/{id}"))
        .map_err(|e| format!("no server record: {e}"))?;
    let uri: http::Uri = records
        .as_str()
        .parse()
        .map_err(|e| format!("no server record: {e}"))?;
    let answer = tokio::time::timeout(RECORD_TIMEOUT, async {
        let res = client.get(uri).await.map_err(|e| e.to_string())?;
        let status = res.status();
        let body = Limited::new(res.into_body(), MAX_RECORD_BYTES)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok::<_, String>((status, body))
    })
    .await
    .map_err(|_| format!("no server record: {records} did not answer within 5 s"))?
    .map_err(|e| format!("no server record: {records}: {e}"))?;
    let (status, body) = answer;
    if !status.is_success() {
        return Err(format!("no server record: {records} answered {status}"));
    }
    let text = String::from_utf8_lossy(&body);
    ServerRecord::from_json(&text).map_err(|e| format!("no server record: {records}: {e}"))
}

fn noted(mut run: Run, detail: String) -> Run {
    run.timeline.anomalies.push(Anomaly {
        at_ms: 0.0,
        class: "no_server_record".to_owned(),
        detail,
    });
    run
}
