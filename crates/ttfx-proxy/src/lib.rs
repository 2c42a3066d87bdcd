//! The vantage proxy: `/proxy/{upstream}/…` forwards to an upstream named in the config
//! and times it the way a benchmark client next to the endpoint would, keeping that
//! record under the request id. It holds the upstreams' keys, so every route checks who
//! calls first ([`ttfx_edge::access`]).
//!
//! It owns the upstreams (their types, the provider presets, one connection per request
//! with its own timings) and reads providers' timing headers. It writes records through
//! ttfx-records and depends on the shared HTTP edge; it must not depend on the
//! simulator, the collector, the runner or `ttfx serve`, which mounts [`router`] at
//! `/proxy` and parses the config file into [`upstream::Upstreams`].

use std::sync::Arc;

use ttfx_edge::access::ProxyAccess;
use ttfx_records::Records;

mod forward;
pub mod hop;
pub mod presets;
mod provider_timing;
mod relay;
pub mod tls;
pub mod upstream;
pub mod upstream_conn;
mod upstream_request;

pub use forward::router;
pub use upstream_request::KEY_HEADERS;

/// What the proxy's routes share.
pub struct ProxyState {
    pub upstreams: upstream::Upstreams,
    /// Who may use the upstreams (and so their keys).
    pub access: ProxyAccess,
    /// Shared with the simulator and `GET /records/{id}`: one store per server.
    pub records: Arc<Records>,
}
