//! The small HTTP edge every native server of ttfx shares: request ids and arrival
//! stamps, CORS, cross-origin isolation, the in-flight limit, who may call a route
//! (Host and Origin checks), JSON error bodies and the wall clock in ms.
//!
//! It is the bottom of the native servers' stack: the simulator, the vantage proxy, the
//! records, the collector and `ttfx serve` use it; it depends on none of them (only on
//! axum, tower-http and tokio), so no server reaches into another for a helper.

pub mod access;
pub mod arrival;
pub mod clock;
pub mod error;
pub mod inflight;
pub mod isolation;
pub mod random;
