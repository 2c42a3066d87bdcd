//! What every simulated endpoint shares: the profiles by name, each one's deployment
//! (its streams and syntheses in flight, load.rs) and the shared record store.

use std::sync::Arc;

use ttfx_records::Records;

use crate::load::Deployment;
use crate::profile::{self, Profile};

pub struct SimState {
    /// Each name with its profile and its deployment: one per name, made with the state,
    /// so requests to a profile share its batch and nothing grows per request.
    profiles: Vec<(String, Profile, Arc<Deployment>)>,
    /// Shared with the proxy and `GET /records/{id}`: one store per server.
    pub records: Arc<Records>,
}

impl SimState {
    /// The built-in profiles, replaced or joined by `configured` ones of the same or a new
    /// name, writing records to `records`.
    pub fn new(configured: Vec<(String, Profile)>, records: Arc<Records>) -> Self {
        let mut profiles: Vec<(String, Profile)> = profile::builtin()
            .into_iter()
            .map(|(n, p)| (n.to_owned(), p))
            .collect();
        for (name, p) in configured {
            match profiles.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = p,
                None => profiles.push((name, p)),
            }
        }
        let profiles = profiles
            .into_iter()
            .map(|(n, p)| (n, p, Arc::default()))
            .collect();
        SimState { profiles, records }
    }

    pub fn profile(&self, name: &str) -> Option<Profile> {
        self.entry(name).map(|(p, _)| p)
    }

    /// The profile named `name` and its deployment.
    pub fn entry(&self, name: &str) -> Option<(Profile, Arc<Deployment>)> {
        self.profiles
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, p, d)| (p.clone(), d.clone()))
    }

    /// LLM streams of the profile `name` running now (load.rs), for tests and tools.
    pub fn streams_running(&self, name: &str) -> Option<usize> {
        self.entry(name).map(|(_, d)| d.streams())
    }

    pub fn profile_names(&self) -> Vec<&str> {
        self.profiles.iter().map(|(n, _, _)| n.as_str()).collect()
    }
}
