//! What every simulated endpoint shares: the profiles by name and the record store.

use std::sync::Arc;

use ttfx_records::Records;

use crate::profile::{self, Profile};

pub struct SimState {
    profiles: Vec<(String, Profile)>,
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
        SimState { profiles, records }
    }

    pub fn profile(&self, name: &str) -> Option<Profile> {
        self.profiles
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.clone())
    }

    pub fn profile_names(&self) -> Vec<&str> {
        self.profiles.iter().map(|(n, _)| n.as_str()).collect()
    }
}
