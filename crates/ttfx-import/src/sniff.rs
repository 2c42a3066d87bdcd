//! Recognising the tool from the content, never from the file name: the first
//! document's top-level keys (or, for a top-level list, its first element's), and the
//! short strings some of them hold (`kind`, `generator`, `version`). Values are skipped
//! without being kept, and reading stops as soon as a key only one tool writes is seen,
//! so recognising a file costs a few bytes when its tool writes a telling key first.

use std::cell::RefCell;
use std::fmt;
use std::io::Read;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::Tool;

/// Which tool's keys these are; `whole` when the document's every key is in (see
/// `formats::recognise`, passed in so the formats sit above the sniffer).
pub type Recognise = fn(&Shape, bool) -> Option<Tool>;

/// Longest string value kept (a `generator` or `version`); longer ones are skipped.
const KEPT_TEXT: usize = 256;
/// Most keys kept: enough for every format, bounded for a hostile file.
const KEPT_KEYS: usize = 512;

/// What the first document looks like.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shape {
    /// The document is a list (its first element's keys are `keys`).
    pub list: bool,
    pub keys: Vec<String>,
    /// (key, value) of the top-level values that are short strings.
    pub texts: Vec<(String, String)>,
}

impl Shape {
    pub fn has(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }

    pub fn has_any(&self, keys: &[&str]) -> bool {
        keys.iter().any(|k| self.has(k))
    }

    pub fn text(&self, key: &str) -> Option<&str> {
        self.texts
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The keys, for an error message: the first few.
    pub fn key_list(&self) -> String {
        let mut keys: Vec<&str> = self.keys.iter().take(12).map(String::as_str).collect();
        if self.keys.len() > 12 {
            keys.push("…");
        }
        if keys.is_empty() {
            "no keys".into()
        } else {
            keys.join(", ")
        }
    }
}

/// The outcome of sniffing.
#[derive(Debug)]
pub enum Sniffed {
    Tool(Tool),
    Unknown(Shape),
    /// Not JSON at all, or empty.
    NotJson(String),
}

/// Reads the first document far enough to tell its tool.
pub fn sniff<R: Read>(input: R, recognise: Recognise) -> Sniffed {
    let state = RefCell::new(Shape::default());
    let decided = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_reader(input);
    let result = (&mut de).deserialize_any(Top {
        shape: &state,
        decided: &decided,
        recognise,
    });
    let shape = state.into_inner();
    if let Some(tool) = decided.into_inner() {
        return Sniffed::Tool(tool);
    }
    match result {
        Ok(()) => match recognise(&shape, true) {
            Some(tool) => Sniffed::Tool(tool),
            None => Sniffed::Unknown(shape),
        },
        // A damaged file whose keys so far still name one tool: that tool's reader
        // gives the precise error.
        Err(e) => match recognise(&shape, true) {
            Some(tool) if !shape.keys.is_empty() => Sniffed::Tool(tool),
            _ if shape.keys.is_empty() => Sniffed::NotJson(e.to_string()),
            _ => Sniffed::Unknown(shape),
        },
    }
}

/// The marker error that stops reading once the tool is known.
const DECIDED: &str = "ttfx-import: decided";

struct Top<'a> {
    shape: &'a RefCell<Shape>,
    decided: &'a RefCell<Option<Tool>>,
    recognise: Recognise,
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object or list")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            let text = map.next_value::<ShortText>()?;
            let mut shape = self.shape.borrow_mut();
            if shape.keys.len() < KEPT_KEYS {
                if let Some(text) = text.0 {
                    shape.texts.push((key.clone(), text));
                }
                shape.keys.push(key);
            }
            if let Some(tool) = (self.recognise)(&shape, false) {
                *self.decided.borrow_mut() = Some(tool);
                return Err(de::Error::custom(DECIDED));
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.shape.borrow_mut().list = true;
        // The first element's keys stand for the list's.
        let first = seq.next_element_seed(FirstElement(Top {
            shape: self.shape,
            decided: self.decided,
            recognise: self.recognise,
        }))?;
        if first.is_some() {
            if let Some(tool) = (self.recognise)(&self.shape.borrow(), true) {
                *self.decided.borrow_mut() = Some(tool);
                return Err(de::Error::custom(DECIDED));
            }
            while seq.next_element::<IgnoredAny>()?.is_some() {}
        }
        Ok(())
    }
}

struct FirstElement<'a>(Top<'a>);

impl<'de> DeserializeSeed<'de> for FirstElement<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self.0)
    }
}

/// A value kept when it is a short string, skipped otherwise.
struct ShortText(Option<String>);

impl<'de> serde::Deserialize<'de> for ShortText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShortTextVisitor)
    }
}

struct ShortTextVisitor;

impl<'de> Visitor<'de> for ShortTextVisitor {
    type Value = ShortText;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ShortText, E> {
        Ok(ShortText((v.len() <= KEPT_TEXT).then(|| v.to_owned())))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<ShortText, E> {
        Ok(ShortText(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<ShortText, E> {
        Ok(ShortText(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<ShortText, E> {
        Ok(ShortText(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<ShortText, E> {
        Ok(ShortText(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<ShortText, E> {
        Ok(ShortText(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ShortText, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(ShortText(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ShortText, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(ShortText(None))
    }
}
