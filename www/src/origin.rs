//! GETs to the serving origin (`ttfx serve`'s lists for the run form's pickers). A page
//! served elsewhere, or an answer that is not 200, gets an error to show, not a panic.

use serde::de::DeserializeOwned;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::Response;

/// The body of `GET path` as text; `what` names the resource in the error.
pub async fn get_text(path: &str, what: &str) -> Result<String, String> {
    let window = web_sys::window().ok_or("no window")?;
    let response: Response = JsFuture::from(window.fetch_with_str(path))
        .await
        .map_err(|_| format!("{what} did not load"))?
        .dyn_into()
        .map_err(|_| "not a response".to_owned())?;
    if !response.ok() {
        return Err(format!("{what} answered HTTP {}", response.status()));
    }
    JsFuture::from(response.text().map_err(|_| "no body".to_owned())?)
        .await
        .ok()
        .and_then(|t| t.as_string())
        .ok_or_else(|| format!("{what} has no text"))
}

/// `text` read as the JSON document `T`; `what` names the resource in the error.
pub fn parse_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is unreadable: {e}"))
}
