//! The simulator's profiles (`GET /sim` on the serving origin: the built-in ones, then
//! those the server's config adds), for the run form's profile suggestions. The page
//! keeps no copy of the list: the simulator (ttfx-sim) defines it once.

use serde::Deserialize;

#[derive(Deserialize)]
struct List {
    profiles: Vec<String>,
}

const WHAT: &str = "the simulator's profile list";

pub fn parse(text: &str) -> Result<Vec<String>, String> {
    crate::origin::parse_json::<List>(text, WHAT).map(|l| l.profiles)
}

/// The list from the serving origin.
pub async fn load() -> Result<Vec<String>, String> {
    parse(&crate::origin::get_text("/sim", WHAT).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn the_list_parses_and_a_foreign_answer_is_named() {
        assert_eq!(
            parse(r#"{"profiles":["default","my-model"]}"#).unwrap(),
            ["default", "my-model"]
        );
        assert!(
            parse("<html>")
                .unwrap_err()
                .contains("profile list is unreadable")
        );
    }
}
