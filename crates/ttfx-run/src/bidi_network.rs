//! A Firefox session's network record over WebDriver BiDi (#36): the session's one BiDi
//! connection subscribes to the `network` events, a task of its own reads each as it
//! comes (ttfx-webdriver's `bidi::network::parse`) and keeps the last
//! [`MAX_KEPT_EVENTS`], and after each run the runner looks the run's request up in them
//! (by its `x-request-id`, else by URL, method and start). The same connection registers
//! inject mode's preload script ([`BidiNetwork::bidi`]): a session gets one.
//!
//! A page decides how many requests it makes and what they look like, so what is kept is
//! bounded (events cut to their lookup fields, the oldest dropped past the cap, each bad
//! event counted and the first one's reason kept) and the reader never panics on them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fantoccini::Client;
use tokio::task::JoinHandle;
use ttfx_core::printable::cut;
use ttfx_webdriver::bidi::network::{self, Missing, NetworkEvent, RequestRecord};
use ttfx_webdriver::bidi::{Bidi, BidiError};

/// Events kept between two lookups: a chat turn makes a few requests; a page making
/// thousands loses its oldest, which are not the turn's (the lookup runs right after).
pub const MAX_KEPT_EVENTS: usize = 2048;
/// How long after a run its events may still be on their way: geckodriver relays them
/// within a few ms; a loaded machine gets room.
const EVENTS_WAIT: Duration = Duration::from_secs(1);
const POLL: Duration = Duration::from_millis(20);
/// Characters of a bad event's reason quoted in a run's anomaly.
const REASON_CHARS: usize = 200;

/// What the reader task has kept.
#[derive(Default)]
struct Kept {
    events: VecDeque<NetworkEvent>,
    /// Events dropped past [`MAX_KEPT_EVENTS`] since the last clear.
    dropped: u64,
    /// Events that could not be read since the last clear, and the first one's reason.
    bad: u64,
    first_bad: Option<String>,
}

impl Kept {
    fn keep(&mut self, event: &ttfx_webdriver::devtools::Event) {
        match network::parse(event) {
            Ok(Some(e)) => {
                if self.events.len() >= MAX_KEPT_EVENTS {
                    self.events.pop_front();
                    self.dropped += 1;
                }
                self.events.push_back(e);
            }
            Ok(None) => {}
            Err(e) => {
                self.bad += 1;
                self.first_bad
                    .get_or_insert_with(|| cut(&e.to_string(), REASON_CHARS).into_owned());
            }
        }
    }

    /// What else a lookup that found nothing should say.
    fn caveats(&self) -> String {
        let mut out = String::new();
        if self.bad > 0 {
            out.push_str(&format!(
                "; {} network event(s) could not be read, the first: {}",
                self.bad,
                self.first_bad.as_deref().unwrap_or_default()
            ));
        }
        if self.dropped > 0 {
            out.push_str(&format!(
                "; {} older event(s) dropped past {MAX_KEPT_EVENTS}",
                self.dropped
            ));
        }
        out
    }
}

/// A session's BiDi connection and the network events it has seen.
pub struct BidiNetwork {
    bidi: Bidi,
    kept: Arc<Mutex<Kept>>,
    reader: JoinHandle<()>,
}

impl Drop for BidiNetwork {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// What a run's lookup asks for: the id it sent, else its request as the page made it.
pub struct Wanted<'a> {
    pub request_id: &'a str,
    /// URL (as the report has it), method, start on the system clock (epoch ms).
    pub page_request: Option<(&'a str, &'a str, f64)>,
}

impl BidiNetwork {
    /// Opens the session's BiDi connection (the session was asked for `webSocketUrl`)
    /// subscribed to the network events a lookup needs.
    pub async fn attach(client: &Client) -> Result<BidiNetwork, BidiError> {
        let (bidi, mut events) = Bidi::attach(client.capabilities(), network::EVENTS).await?;
        let kept = Arc::new(Mutex::new(Kept::default()));
        let into = kept.clone();
        let reader = tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                // A poisoned lock means a panic elsewhere: stop keeping, lookups say so.
                let Ok(mut kept) = into.lock() else { return };
                kept.keep(&event);
            }
        });
        Ok(BidiNetwork { bidi, kept, reader })
    }

    /// The connection, for inject mode's preload script.
    pub fn bidi(&self) -> &Bidi {
        &self.bidi
    }

    /// Forgets what was seen (the warm-ups', a looked-up group's).
    pub fn clear(&self) {
        if let Ok(mut kept) = self.kept.lock() {
            *kept = Kept::default();
        }
    }

    /// The record of the run's request, waiting up to [`EVENTS_WAIT`] for its events;
    /// else why there is none, for the run's `no_ground_truth` anomaly.
    pub async fn lookup(&self, wanted: &Wanted<'_>) -> Result<RequestRecord, String> {
        let deadline = tokio::time::Instant::now() + EVENTS_WAIT;
        loop {
            let (found, caveats) = {
                let mut kept = self
                    .kept
                    .lock()
                    .map_err(|_| "no ground truth: the BiDi event reader failed".to_owned())?;
                let events = kept.events.make_contiguous();
                let found = network::find_request(events, wanted.request_id).or_else(|_| {
                    let (url, method, at) = wanted.page_request.ok_or(Missing::NoRequest)?;
                    network::find_request_by(events, url, method, at)
                });
                (found, kept.caveats())
            };
            let late = tokio::time::Instant::now() >= deadline;
            match found {
                // Complete: no later event can change it.
                Ok(record) if record.completed || late => return Ok(record),
                Err(missing) if late => return Err(why(missing, wanted) + &caveats),
                _ => tokio::time::sleep(POLL).await,
            }
        }
    }
}

/// Why a lookup found nothing, for a person.
fn why(missing: Missing, wanted: &Wanted<'_>) -> String {
    let waited = EVENTS_WAIT.as_secs();
    let request = match wanted.page_request {
        Some((url, method, _)) => format!("{method} {}", cut(url, REASON_CHARS)),
        None => "with the run's x-request-id".to_owned(),
    };
    match (missing, wanted.page_request) {
        (Missing::NoRequest, Some(_)) => format!(
            "no ground truth: WebDriver BiDi saw no request {request} within {} ms of the \
             probe's request_start (waited {waited} s)",
            network::SAME_REQUEST_MS,
        ),
        (Missing::NoRequest, None) => {
            format!("no ground truth: WebDriver BiDi saw no request {request} (waited {waited} s)")
        }
        (Missing::NoResponseStart, _) => format!(
            "no ground truth: WebDriver BiDi saw the request {request} but no responseStart \
             (waited {waited} s)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use ttfx_webdriver::devtools::Event;

    use super::*;

    fn sent(id: &str) -> Event {
        Event {
            method: "network.beforeRequestSent".to_owned(),
            params: json!({"request": {"request": id, "url": "http://a/x", "method": "GET",
                                       "timings": {"requestTime": 5.0}}}),
        }
    }

    #[test]
    fn past_the_cap_the_oldest_events_go_and_are_counted() {
        let mut kept = Kept::default();
        for i in 0..MAX_KEPT_EVENTS + 3 {
            kept.keep(&sent(&i.to_string()));
        }
        assert_eq!(kept.events.len(), MAX_KEPT_EVENTS);
        assert_eq!(kept.events[0].request, "3");
        assert_eq!(kept.dropped, 3);
        assert_eq!(kept.caveats(), "; 3 older event(s) dropped past 2048");
    }

    #[test]
    fn bad_events_are_counted_and_the_first_reason_kept_cut() {
        let mut kept = Kept::default();
        let long = "u".repeat(network::MAX_URL_BYTES + 1);
        let mut bad = sent("1");
        bad.params["request"]["url"] = json!(long);
        kept.keep(&bad);
        kept.keep(&Event {
            method: "network.responseStarted".to_owned(),
            params: json!(null),
        });
        kept.keep(&Event {
            method: "browsingContext.load".to_owned(),
            params: json!(null),
        });
        assert!(kept.events.is_empty());
        assert_eq!(kept.bad, 2);
        assert_eq!(
            kept.caveats(),
            "; 2 network event(s) could not be read, the first: network.beforeRequestSent: \
             request.url is 8193 bytes, more than 8192"
        );
    }

    #[test]
    fn why_names_the_request_and_what_was_missing() {
        let wanted = Wanted {
            request_id: "ttfx-run-1-0",
            page_request: Some(("http://a/x", "POST", 1.0)),
        };
        assert_eq!(
            why(Missing::NoResponseStart, &wanted),
            "no ground truth: WebDriver BiDi saw the request POST http://a/x but no \
             responseStart (waited 1 s)"
        );
        assert_eq!(
            why(Missing::NoRequest, &wanted),
            "no ground truth: WebDriver BiDi saw no request POST http://a/x within 100 ms of \
             the probe's request_start (waited 1 s)"
        );
        let by_id = Wanted {
            request_id: "ttfx-run-1-0",
            page_request: None,
        };
        assert_eq!(
            why(Missing::NoRequest, &by_id),
            "no ground truth: WebDriver BiDi saw no request with the run's x-request-id \
             (waited 1 s)"
        );
    }
}
