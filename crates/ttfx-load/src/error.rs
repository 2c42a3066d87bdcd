//! Why a load could not be made. Each text carries its cause and names what to fix;
//! none carries a header's value or a URL's userinfo or query.

use std::path::PathBuf;

use crate::client::ClientError;
use crate::slo::SloError;
use crate::spec::SpecError;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Slo(#[from] SloError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Target(#[from] ttfx_core::target::TargetError),
    #[error("--api: {0}")]
    Api(#[from] ttfx_core::chat_api::UnknownChatApi),
    #[error("target `{0}`: a page is measured by `ttfx run`; `ttfx load` drives an endpoint")]
    PageTarget(String),
    #[error(
        "target `{0}` is served by a local `ttfx serve`, and none was started (the `ttfx` \
         binary starts one for sim/ and proxy/ targets)"
    )]
    NoLocalServer(String),
    #[error("--api-key-env {0}: the variable is not set (or not UTF-8)")]
    ApiKeyEnv(String),
    #[error("--header `{0}`: expected NAME: VALUE")]
    HeaderForm(String),
    #[error("cannot start the pacing thread: {0}")]
    Thread(std::io::Error),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot write {}: {cause}", path.display())]
    WriteJson {
        path: PathBuf,
        cause: std::io::Error,
    },
}
