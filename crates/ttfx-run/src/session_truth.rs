//! Where one browser session's ground truth comes from: Chromium's DevTools performance
//! log, Firefox's WebDriver BiDi network events, or nowhere (WebKitWebDriver; a session
//! whose BiDi socket could not be had), and then why (ground_truth.rs writes it into
//! each run).

use fantoccini::Client;
use ttfx_core::report::Run;
use ttfx_webdriver::bidi::Bidi;
use ttfx_webdriver::devtools::Event;

use super::bidi_network::{BidiNetwork, Wanted};
use super::driver::{self, Browser};
use super::ground_truth::{self, GroundTruth, Job};

/// A session's source of ground truth.
pub enum SessionTruth {
    /// chromedriver's performance log (`goog:loggingPrefs`, asked for by the session).
    DevTools,
    /// The session's BiDi connection, subscribed to the network events.
    Bidi(BidiNetwork),
    /// None, and why.
    Unavailable(String),
}

impl SessionTruth {
    /// The session's source: its browser's, once connected.
    pub async fn open(client: &Client, browser: Browser) -> SessionTruth {
        match browser {
            Browser::Chromium => SessionTruth::DevTools,
            Browser::Firefox => match BidiNetwork::attach(client).await {
                Ok(network) => SessionTruth::Bidi(network),
                // A grid may not pass webSocketUrl through: the runs go on without.
                Err(e) => SessionTruth::Unavailable(format!(
                    "no ground truth: the Firefox session's WebDriver BiDi network events \
                     could not be had: {e}"
                )),
            },
            Browser::Webkit => SessionTruth::Unavailable(
                "no ground truth: WebKitWebDriver speaks neither WebDriver BiDi nor the \
                 DevTools protocol, so the browser's own network record cannot be read"
                    .to_owned(),
            ),
        }
    }

    /// The session's BiDi connection, which inject mode's preload script shares (a
    /// session gets one).
    pub fn bidi(&self) -> Option<&Bidi> {
        match self {
            SessionTruth::Bidi(network) => Some(network.bidi()),
            _ => None,
        }
    }

    /// Drops what gathered so far (the warm-ups', a looked-up group's): the next lookup
    /// sees only the next runs' requests.
    pub async fn forget(&self, client: &Client) {
        match self {
            SessionTruth::DevTools => {
                let _ = driver::network_events(client).await;
            }
            SessionTruth::Bidi(network) => network.clear(),
            SessionTruth::Unavailable(_) => {}
        }
    }

    /// The DevTools events gathered since the last read (the log hands each out once);
    /// none for the other sources.
    pub async fn devtools_events(&self, client: &Client) -> Vec<Event> {
        match self {
            SessionTruth::DevTools => driver::network_events(client).await,
            _ => Vec::new(),
        }
    }

    /// The run's entry, `events` being the group's DevTools events; else why none.
    pub async fn entry(
        &self,
        run: &Run,
        job: Job<'_>,
        events: &[Event],
    ) -> Result<GroundTruth, String> {
        match self {
            SessionTruth::DevTools => ground_truth::from_devtools(run, job, events),
            SessionTruth::Bidi(network) => {
                // Nothing to wait for when there is nothing to compare.
                ground_truth::probe_first_byte(run)?;
                let wanted = Wanted {
                    request_id: job.request_id,
                    page_request: ground_truth::page_request(run),
                };
                let record = network.lookup(&wanted).await?;
                ground_truth::from_bidi(run, job, &record)
            }
            SessionTruth::Unavailable(why) => Err(why.clone()),
        }
    }
}
