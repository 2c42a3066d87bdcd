//! Who may read `/field/…`: the answers hold users' runs (`slowest` returns whole
//! reports), so a collector that can be reached beyond this machine answers reads only
//! with its read token (#30). Writes (`POST /collect`) stay open to the allowed origins:
//! a page's beacon carries no secret.
//!
//! The rule, decided once at startup ([`ReadAccess::decide`]):
//! - a token given (`--collect-read-token-file PATH` or `--collect-read-token TOKEN`):
//!   every read needs `Authorization: Bearer TOKEN`, wherever the server listens;
//! - no token, listening on a loopback address only and no `--collect-host`: reads are
//!   open (the lab's Field view on the same machine);
//! - no token otherwise (a non-loopback `--addr`, e.g. 0.0.0.0, or a public name given
//!   with `--collect-host`, as behind a reverse proxy): the server refuses to start and
//!   says how to give one. It does not make one up: a token printed at startup ends in
//!   logs, and changes at every restart under a supervisor.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Shortest read token: 16 bytes (128 bits from a random source is out of reach of
/// guessing at any request rate; `openssl rand -hex 32` gives 64).
pub const MIN_READ_TOKEN_BYTES: usize = 16;

/// Where the token comes from, as the command line gave it.
#[derive(Debug, Clone)]
pub enum TokenSource {
    /// `--collect-read-token TOKEN` (visible to `ps`; the file is preferred).
    Arg(Secret),
    /// `--collect-read-token-file PATH`: the file's text without its trailing newline.
    File(PathBuf),
}

/// A secret string: its `Debug` never shows it.
#[derive(Clone)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// How reads are answered.
#[derive(Debug, Clone)]
pub enum ReadAccess {
    /// No token: only on loopback.
    Open,
    /// The SHA-256 of the token: a request's token is hashed and compared in constant
    /// time, so neither its bytes nor its length can be learned from the timing.
    Token([u8; 32]),
}

/// Why the read rule could not be set up; each text names the option to give.
#[derive(Debug, thiserror::Error)]
pub enum ReadAccessError {
    #[error(
        "the collector is reachable beyond this machine ({why}) and its /field/… reads \
         return users' runs: give a read token with --collect-read-token-file PATH (a \
         file holding at least {MIN_READ_TOKEN_BYTES} random bytes, e.g. `openssl rand \
         -hex 32 > PATH`); readers send `Authorization: Bearer TOKEN`"
    )]
    TokenNeeded { why: String },
    #[error("--collect-read-token-file {}: cannot read: {cause}", path.display())]
    Unreadable {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "{from}: the read token is {len} bytes; give at least {MIN_READ_TOKEN_BYTES} (e.g. \
         `openssl rand -hex 32`)"
    )]
    TooShort { from: String, len: usize },
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Is the server reachable beyond this machine: why, or `None`.
fn beyond_loopback(listen: SocketAddr, hosts: &[String]) -> Option<String> {
    if !listen.ip().is_loopback() {
        return Some(format!("--addr {listen} is not a loopback address"));
    }
    hosts
        .first()
        .map(|h| format!("--collect-host {h} names it for other machines"))
}

impl ReadAccess {
    /// The rule for a server listening on `listen` and answering `hosts`, with the token
    /// from `source` if any.
    pub fn decide(
        listen: SocketAddr,
        hosts: &[String],
        source: Option<&TokenSource>,
    ) -> Result<ReadAccess, ReadAccessError> {
        let (token, from) = match source {
            None => {
                return match beyond_loopback(listen, hosts) {
                    Some(why) => Err(ReadAccessError::TokenNeeded { why }),
                    None => Ok(ReadAccess::Open),
                };
            }
            Some(TokenSource::Arg(secret)) => (secret.0.clone(), "--collect-read-token".to_owned()),
            Some(TokenSource::File(path)) => (
                read_token_file(path)?,
                format!("--collect-read-token-file {}", path.display()),
            ),
        };
        if token.len() < MIN_READ_TOKEN_BYTES {
            return Err(ReadAccessError::TooShort {
                from,
                len: token.len(),
            });
        }
        Ok(ReadAccess::Token(digest(token.as_bytes())))
    }

    /// Does a request with these headers may read?
    pub fn allows(&self, headers: &axum::http::HeaderMap) -> bool {
        let ReadAccess::Token(want) = self else {
            return true;
        };
        let given = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
        match given {
            Some(token) => bool::from(digest(token).ct_eq(want)),
            None => false,
        }
    }
}

/// The token file's text without its trailing newline (as `echo` or `openssl` end it).
fn read_token_file(path: &Path) -> Result<String, ReadAccessError> {
    let text = std::fs::read_to_string(path).map_err(|cause| ReadAccessError::Unreadable {
        path: path.to_path_buf(),
        cause,
    })?;
    Ok(text.trim_end_matches(['\n', '\r']).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(token: &str) -> axum::http::HeaderMap {
        let mut h = axum::http::HeaderMap::new();
        h.insert(
            axum::http::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        h
    }

    #[test]
    fn loopback_without_a_token_is_open_and_anything_else_needs_one() {
        let lo: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(matches!(
            ReadAccess::decide(lo, &[], None),
            Ok(ReadAccess::Open)
        ));
        let e = ReadAccess::decide(any, &[], None).unwrap_err().to_string();
        assert!(e.contains("--addr 0.0.0.0:8080 is not a loopback"), "{e}");
        let e = ReadAccess::decide(lo, &["c.example.com".into()], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--collect-host c.example.com"), "{e}");
        let short = TokenSource::Arg(Secret("short".into()));
        let e = ReadAccess::decide(any, &[], Some(&short))
            .unwrap_err()
            .to_string();
        assert!(e.contains("5 bytes; give at least 16"), "{e}");
    }

    #[test]
    fn only_the_token_itself_reads() {
        let token = "0123456789abcdef0123";
        let source = TokenSource::Arg(Secret(token.into()));
        let any: SocketAddr = "0.0.0.0:1".parse().unwrap();
        let access = ReadAccess::decide(any, &[], Some(&source)).unwrap();
        assert!(access.allows(&bearer(token)));
        assert!(!access.allows(&bearer("0123456789abcdef012")));
        assert!(!access.allows(&bearer(&format!("{token}4"))));
        assert!(!access.allows(&axum::http::HeaderMap::new()));
        assert!(format!("{source:?}").contains("Secret(…)"));
    }
}
