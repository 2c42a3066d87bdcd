//! The client events the simulated socket reads, parsed into typed fields (unknown fields
//! skipped, never built into a JSON tree): a 2 MiB message costs about its own bytes.

use serde::Deserialize;

/// One client message.
#[derive(Debug, Deserialize)]
pub struct ClientEvent {
    #[serde(rename = "type")]
    pub kind: String,
    pub event_id: Option<String>,
    pub item: Option<Item>,
    pub response: Option<ResponseParams>,
    pub session: Option<SessionParams>,
}

#[derive(Debug, Deserialize)]
pub struct Item {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub role: Option<String>,
    #[serde(default)]
    pub content: Vec<Part>,
}

/// A content part: `input_text` (or `text`, `output_text`) carries `text`; other kinds
/// (audio) carry none here.
#[derive(Debug, Deserialize)]
pub struct Part {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ResponseParams {
    pub max_output_tokens: Option<MaxTokens>,
}

#[derive(Debug, Default, Deserialize)]
pub struct SessionParams {
    /// The GA spelling.
    pub max_output_tokens: Option<MaxTokens>,
    /// The beta spelling.
    pub max_response_output_tokens: Option<MaxTokens>,
}

/// A count, or `"inf"` (no limit), as the API takes it.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub enum MaxTokens {
    Count(u64),
    Word(Inf),
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub enum Inf {
    #[serde(rename = "inf")]
    Inf,
}

impl MaxTokens {
    pub fn limit(self) -> Option<usize> {
        match self {
            MaxTokens::Count(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            MaxTokens::Word(Inf::Inf) => None,
        }
    }
}

/// The message as a client event; `Err` is a message for the `error` event.
pub fn parse(text: &str) -> Result<ClientEvent, String> {
    serde_json::from_str(text).map_err(|e| format!("the message is not a client event: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_it_needs_and_skips_the_rest() {
        let e = parse(
            r#"{"type":"conversation.item.create","event_id":"c1","previous_item_id":null,
               "item":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#,
        )
        .unwrap();
        assert_eq!(e.kind, "conversation.item.create");
        assert_eq!(e.event_id.as_deref(), Some("c1"));
        let item = e.item.unwrap();
        assert_eq!(item.content[0].text.as_deref(), Some("hi"));
        let e =
            parse(r#"{"type":"response.create","response":{"max_output_tokens":"inf"}}"#).unwrap();
        assert_eq!(e.response.unwrap().max_output_tokens.unwrap().limit(), None);
        let e = parse(r#"{"type":"session.update","session":{"max_output_tokens":5}}"#).unwrap();
        assert_eq!(
            e.session.unwrap().max_output_tokens.unwrap().limit(),
            Some(5)
        );
    }

    #[test]
    fn bad_messages_say_why() {
        assert!(
            parse("not json")
                .unwrap_err()
                .contains("not a client event")
        );
        assert!(parse(r#"{"event_id":"x"}"#).unwrap_err().contains("type"));
        assert!(parse(r#"{"type":"x","item":{"content":5}}"#).is_err());
    }
}
