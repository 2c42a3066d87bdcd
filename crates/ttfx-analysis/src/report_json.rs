//! The report as JSON text: a small serde `Serializer` writing into a `String`, in place
//! of serde_json's in this wasm. The text is serde_json's compact form, byte for byte:
//! the same escapes, integers in decimal, floats in zmij's shortest form (the formatter
//! serde_json uses; `null` when not finite), `null` for `None` and unit, unit variants as
//! strings, newtype variants as `{"variant":value}`. Tests compare the two on every
//! report the decode vectors make.
//!
//! Why: each field type of each report struct instantiates serde_json's field writer, with
//! its I/O error plumbing; this writer's are a few instructions each. 2 KB gzip of the
//! analysis wasm (measured).

use std::fmt::{self, Write as _};

use serde::ser::{self, Serialize};
use ttfx_core::decode::json::write_string;

/// `value` as compact JSON, as `serde_json::to_string` writes it.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, Error> {
    let mut writer = Writer { out: String::new() };
    value.serialize(&mut writer)?;
    Ok(writer.out)
}

/// What cannot be written: a map key that is not a string (serde_json would quote an
/// integer key; no report has one), or a serializer error a type raises itself.
#[derive(Debug)]
pub struct Error;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the report could not be written as JSON")
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Error
    }
}

pub struct Writer {
    out: String,
}

impl Writer {
    fn number(&mut self, n: impl fmt::Display) -> Result<(), Error> {
        write!(self.out, "{n}").map_err(|_| Error)
    }

    fn float(&mut self, text: Option<&str>) -> Result<(), Error> {
        self.out.push_str(text.unwrap_or("null"));
        Ok(())
    }

    /// `{"variant":` before a variant's content.
    fn open_variant(&mut self, variant: &str) {
        self.out.push('{');
        write_string(variant, &mut self.out);
        self.out.push(':');
    }
}

/// A sequence, map or struct being written: `first` until its first element.
pub struct Compound<'a> {
    writer: &'a mut Writer,
    first: bool,
    /// What closes it: `]`, `}`, or `]}` / `}}` for a variant's content.
    close: &'static str,
}

impl Compound<'_> {
    fn comma(&mut self) {
        if !self.first {
            self.writer.out.push(',');
        }
        self.first = false;
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        self.comma();
        write_string(key, &mut self.writer.out);
        self.writer.out.push(':');
        value.serialize(&mut *self.writer)
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.comma();
        value.serialize(&mut *self.writer)
    }

    fn close(self) -> Result<(), Error> {
        self.writer.out.push_str(self.close);
        Ok(())
    }
}

impl<'a> ser::Serializer for &'a mut Writer {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.number(v)
    }

    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.number(v)
    }

    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.number(v)
    }

    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.number(v)
    }

    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.number(v)
    }

    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.number(v)
    }

    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.number(v)
    }

    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.number(v)
    }

    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.number(v)
    }

    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.number(v)
    }

    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        let mut buffer = zmij::Buffer::new();
        self.float(v.is_finite().then(|| buffer.format_finite(v)))
    }

    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        let mut buffer = zmij::Buffer::new();
        self.float(v.is_finite().then(|| buffer.format_finite(v)))
    }

    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_string(v, &mut self.out);
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        v.serialize(self)
    }

    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Error> {
        self.out.push_str("null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.open_variant(variant);
        value.serialize(&mut *self)?;
        self.out.push('}');
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, Error> {
        self.out.push('[');
        Ok(Compound {
            writer: self,
            first: true,
            close: "]",
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Error> {
        self.open_variant(variant);
        self.out.push('[');
        Ok(Compound {
            writer: self,
            first: true,
            close: "]}",
        })
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, Error> {
        self.out.push('{');
        Ok(Compound {
            writer: self,
            first: true,
            close: "}",
        })
    }

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a>, Error> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Error> {
        self.open_variant(variant);
        self.out.push('{');
        Ok(Compound {
            writer: self,
            first: true,
            close: "}}",
        })
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.comma();
        let start = self.writer.out.len();
        key.serialize(&mut *self.writer)?;
        // Keys are strings in every report type; anything else is refused, not guessed.
        if !self.writer.out[start..].starts_with('"') {
            return Err(Error);
        }
        self.writer.out.push(':');
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(&mut *self.writer)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::path::PathBuf;
    use ttfx_core::Milestone;
    use ttfx_core::decode::{DialectKind, Limits};
    use ttfx_core::recorder::Recorder;
    use ttfx_core::report::{BatchReport, ReportFile, Run, RunReport};
    use ttfx_core::timeline::{Timeline, Visibility, VisibilityChange};
    use ttfx_core::voice_result::{AudioMeasurement, HandoffResult, VoiceResult};

    /// Both writers, the same text.
    fn same_as_serde_json<T: Serialize>(value: &T) {
        let ours = to_string(value).expect("writes");
        let theirs = serde_json::to_string(value).expect("serde_json writes");
        assert_eq!(ours, theirs);
    }

    /// A stream in `step`-byte chunks, with page observations; past 256 chunks the series
    /// is summarized.
    fn timeline(body: &[u8], dialect: Option<DialectKind>, step: usize, n: usize) -> Timeline {
        let mut recorder = Recorder::new(dialect, Limits::DEFAULT).with_chunk_limit(256);
        recorder.headers(
            31.25,
            200,
            Some("text/event-stream"),
            &["ttft;dur=12.5, e2e;dur=100.25;desc=\"x\u{1}\""],
        );
        let mut at = 40.0;
        for (i, piece) in body.chunks(step).enumerate() {
            at += if i % 7 == 3 { 512.125 } else { 3.3 };
            recorder.chunk(at, piece);
        }
        if n.is_multiple_of(3) {
            recorder.abort(at + 1.0);
        } else {
            recorder.end(at + 1.0);
        }
        let mut t = recorder.finish();
        t.milestones.set(Milestone::FirstDom, at / 2.0);
        t.environment.user_agent = Some("Mozilla/5.0 \"x\"\n\t\u{7f}é😀".into());
        t.environment.visibility_changes.push(VisibilityChange {
            at_ms: 12.5,
            state: Visibility::Hidden,
        });
        t
    }

    #[test]
    fn every_decode_vector_report_reads_as_serde_json_writes_it() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ttfx-core/testdata/decode");
        let mut runs = Vec::new();
        for (n, entry) in std::fs::read_dir(dir).expect("vectors").enumerate() {
            let path = entry.expect("entry").path();
            if path.extension().and_then(|e| e.to_str()) != Some("in") {
                continue;
            }
            let body = std::fs::read(&path).expect("vector");
            for (dialect, step) in [(None, 1), (None, 7), (Some(DialectKind::OpenAiChat), 64)] {
                let t = timeline(&body, dialect, step, n);
                let Ok(report) = RunReport::of_timeline(Some(format!("r{n}")), None, t) else {
                    continue;
                };
                same_as_serde_json(&report);
                runs.push(report.run);
            }
        }
        assert!(runs.len() > 50, "{} runs", runs.len());
        // A long stream: its series is summarized.
        let chunk = b"data: {\"choices\":[{\"delta\":{\"content\":\"tok \"}}]}\n\n";
        let long = chunk.repeat(3_000);
        let report = RunReport::of_timeline(None, None, timeline(&long, None, chunk.len(), 1));
        let report = report.expect("a long run");
        assert!(report.run.timeline.chunk_summary.is_some());
        same_as_serde_json(&report);
        runs.push(report.run);
        same_as_serde_json(&BatchReport::from_runs(runs, &[]));
    }

    #[test]
    fn a_voice_report_reads_as_serde_json_writes_it() {
        let doc = include_str!("../../../docs/report.md");
        let json = doc
            .split("```json\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("docs/report.md has a ```json example");
        let Ok(ReportFile::Run(report)) = ReportFile::from_json(json) else {
            panic!("the example is a run report");
        };
        same_as_serde_json(&report);
        let mut t = report.run.timeline.clone();
        let audio: AudioMeasurement = serde_json::from_str(
            r#"{"milestones":{"tts_request":120.5,"first_audio_byte":180.25,
                "first_audio_scheduled":190.0,"first_audio_out":230.125},
               "audio":{"audio_ms":1500.5,"last_byte_at_ms":900.0,
                 "underruns":[{"at_ms":400.0,"silence_ms":12.5}],
                 "chunks":[{"at_ms":180.25,"audio_ms":200.0},{"at_ms":300.0,"audio_ms":1300.5}],
                 "output":{"sample_rate":24000.0,"state_at_first_schedule":"suspended",
                   "resumed_at_ms":200.0,"output_latency_ms":20.0,"base_latency_ms":5.0,
                   "latency_added_ms":25.0,
                   "output_timestamp":{"context_time_s":1.5,"performance_time_ms":1234.5},
                   "first_audible_context_s":0.25}},
               "audio_out_method":"output_timestamp","notes":["a note\u0002"]}"#,
        )
        .expect("an audio measurement");
        let handoff: HandoffResult = serde_json::from_str(
            r#"{"record":{"segments":[{"index":0,"chars":12,"last_token_at_ms":100.0,
                 "complete_at_ms":110.0,"handed_at_ms":115.5},
                 {"index":1,"chars":30,"last_token_at_ms":150.0,"complete_at_ms":160.0}],
               "llm_end_at_ms":170.0},
               "milestones":{"first_sentence":110.0}}"#,
        )
        .expect("a handoff result");
        VoiceResult::Audio(audio).apply_to(&mut t);
        VoiceResult::Handoff(handoff).apply_to(&mut t);
        let report = RunReport::of_timeline(Some("v".into()), Some("voice".into()), t);
        same_as_serde_json(&report.expect("a voice run"));
    }

    #[test]
    fn the_data_model_reads_as_serde_json_writes_it() {
        #[derive(Serialize)]
        #[serde(rename_all = "snake_case")]
        enum Shape {
            Unit,
            Newtype(f64),
            Tuple(u8, i64),
            Struct { a: Option<u32>, b: Vec<f32> },
        }
        #[derive(Serialize)]
        struct Unit;
        #[derive(Serialize)]
        struct Tuple(i8, u16);
        #[derive(Serialize)]
        struct All {
            shapes: Vec<Shape>,
            floats: [f64; 9],
            ints: (i8, i16, i32, i64, i128, u8, u16, u32, u64, u128),
            text: (char, char, String),
            none: Option<bool>,
            unit: (),
            unit_struct: Unit,
            tuple: Tuple,
            map: std::collections::BTreeMap<String, Option<f64>>,
            bytes: Vec<u8>,
        }
        let all = All {
            shapes: vec![
                Shape::Unit,
                Shape::Newtype(-0.5),
                Shape::Tuple(7, -9),
                Shape::Struct {
                    a: Some(3),
                    b: vec![0.1, f32::NAN, 1e30],
                },
            ],
            floats: [
                0.0,
                -0.0,
                1.0,
                0.1,
                1e21,
                1e-7,
                f64::MAX,
                f64::NAN,
                f64::NEG_INFINITY,
            ],
            ints: (
                i8::MIN,
                -1,
                0,
                i64::MIN,
                i128::MIN,
                255,
                1,
                2,
                u64::MAX,
                u128::MAX,
            ),
            text: ('\u{1f}', 'é', "\"\\/\u{8}\u{c}\n\r\t\u{0}\u{7f}😀".into()),
            none: None,
            unit: (),
            unit_struct: Unit,
            tuple: Tuple(-1, 2),
            map: [("b".to_owned(), Some(1.5)), ("a\n".to_owned(), None)]
                .into_iter()
                .collect(),
            bytes: vec![0, 1, 255],
        };
        same_as_serde_json(&all);
        same_as_serde_json(&Vec::<u8>::new());
        same_as_serde_json(&std::collections::BTreeMap::<String, u8>::new());
    }

    #[test]
    fn a_map_key_that_is_not_a_string_is_an_error() {
        let map: std::collections::BTreeMap<u8, u8> = [(1, 2)].into_iter().collect();
        assert!(to_string(&map).is_err());
    }

    /// Runs are compared with what they were before this writer too: `Runs::finish`.
    #[test]
    fn runs_finish_writes_what_serde_json_did() {
        let mut runs = crate::Runs::default();
        runs.begin(1, None).expect("begins");
        let sse = b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n";
        runs.chunks(1, &[50.0, sse.len() as f64], sse)
            .expect("chunks");
        runs.recorder(1).expect("run").end(60.0);
        let ours = runs.finish(1).expect("a report").report;
        let mut recorder = Recorder::new(None, Limits::DEFAULT);
        recorder.chunk(50.0, sse);
        recorder.end(60.0);
        let report = RunReport::new(Run::new(None, None, recorder.finish()).expect("a run"));
        assert_eq!(
            ours,
            serde_json::to_string(&report).expect("serde_json writes")
        );
    }
}
