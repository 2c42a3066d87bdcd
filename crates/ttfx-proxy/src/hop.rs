//! Headers that belong to one connection (RFC 9110 §7.6.1): the fixed hop-by-hop names
//! and every name the `Connection` header lists. The proxy forwards neither, in either
//! direction: a client's `Connection: X-Foo` must not carry `X-Foo` to the upstream, nor
//! an upstream's back to the client.

use axum::http::{HeaderMap, HeaderName, header};

/// The hop-by-hop headers named by RFC 9110 and RFC 9112 (and `Proxy-Connection`, which
/// old clients still send).
pub const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The hop-by-hop headers of one message: those of [`HOP_BY_HOP`] and those its
/// `Connection` headers list. Linear in the size of the `Connection` values (hyper
/// bounds a message's headers).
#[derive(Debug, Default)]
pub struct HopByHop {
    named: Vec<HeaderName>,
}

impl HopByHop {
    pub fn of(headers: &HeaderMap) -> HopByHop {
        let named = headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
            .collect();
        HopByHop { named }
    }

    /// `name` belongs to this message's connection only.
    pub fn contains(&self, name: &HeaderName) -> bool {
        HOP_BY_HOP.contains(&name.as_str()) || self.named.contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_names_and_those_connection_lists_are_hop_by_hop() {
        let mut h = HeaderMap::new();
        h.append(header::CONNECTION, "keep-alive, X-Foo".parse().unwrap());
        h.append(header::CONNECTION, "x-bar".parse().unwrap());
        let hop = HopByHop::of(&h);
        for name in ["x-foo", "x-bar", "te", "upgrade", "proxy-authenticate"] {
            assert!(hop.contains(&HeaderName::from_static(name)), "{name}");
        }
        assert!(!hop.contains(&header::CONTENT_TYPE));
    }
}
