//! Reading an upload to `/v1/audio/transcriptions`: OpenAI's multipart/form-data
//! (`file`, `model`, optional `language`, `prompt`, `response_format`, `stream`, …),
//! parsed by multer through axum's `Multipart`. Every part is read as it streams in and
//! counted against its cap (`limits`); the audio is never held, only its head, for the
//! WAV header. The end of the stream is the moment the upload is complete.

use axum::extract::multipart::{Field, MultipartError};
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::{StatusCode, header};

use super::wav::{self, Audio};
use crate::limits::{
    MAX_FORM_FIELD_BYTES, MAX_FORM_FIELDS, MAX_UPLOAD_BODY_BYTES, MAX_UPLOAD_BYTES,
    WAV_PREFIX_BYTES, shown,
};

/// What the simulator uses from an upload.
#[derive(Debug, Clone, PartialEq)]
pub struct Upload {
    /// Bytes of the audio file.
    pub file_bytes: u64,
    pub audio: Audio,
    pub model: Option<String>,
    pub language: Option<String>,
    /// Characters of `prompt` (counted as input text tokens).
    pub prompt_chars: usize,
    pub response_format: Option<String>,
    pub stream: bool,
}

/// An upload the simulator refuses: status and a message for a person.
#[derive(Debug)]
pub struct Refused(pub StatusCode, pub String);

fn bad(message: impl Into<String>) -> Refused {
    Refused(StatusCode::BAD_REQUEST, message.into())
}

/// A multipart error: a body past its cap is 413 naming the cap; any other is a 400
/// saying what multer found wrong (a missing boundary, a cut stream, a bad part header).
fn multipart(e: &MultipartError) -> Refused {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return Refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the multipart body passed the cap of {MAX_UPLOAD_BODY_BYTES} bytes per \
                 upload (a {MAX_UPLOAD_BYTES}-byte file, OpenAI's 25 MB limit, and the form's \
                 fields)"
            ),
        );
    }
    bad(format!(
        "the body is not a readable multipart/form-data upload: {}",
        e.body_text()
    ))
}

/// Reads the whole upload from the request's multipart/form-data body. Returns when the
/// last byte of the body has been read.
pub async fn receive(req: Request) -> Result<Upload, Refused> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    // Multipart uses no state.
    let Ok(form) = Multipart::from_request(req, &()).await else {
        let sent = content_type.map_or("none".to_owned(), |c| format!("`{}`", shown(&c)));
        return Err(bad(format!(
            "expected a multipart/form-data body with a boundary (Content-Type: \
             multipart/form-data; boundary=…), as OpenAI's endpoint takes; the \
             request's Content-Type is {sent}"
        )));
    };
    read(form).await
}

/// Reads the whole upload. Returns when the last byte of the body has been read.
async fn read(mut form: Multipart) -> Result<Upload, Refused> {
    let mut file: Option<(u64, Vec<u8>)> = None;
    let mut upload = Upload {
        file_bytes: 0,
        audio: Audio::Unknown,
        model: None,
        language: None,
        prompt_chars: 0,
        response_format: None,
        stream: false,
    };
    let mut fields = 0;
    while let Some(mut field) = form.next_field().await.map_err(|e| multipart(&e))? {
        fields += 1;
        if fields > MAX_FORM_FIELDS {
            return Err(bad(format!(
                "more than {MAX_FORM_FIELDS} form fields, the cap per upload"
            )));
        }
        let name = field.name().unwrap_or("").to_owned();
        if name == "file" {
            if file.is_some() {
                return Err(bad("two `file` fields: send one audio file per request"));
            }
            file = Some(read_file(&mut field).await?);
            continue;
        }
        let value = read_field(&name, &mut field).await?;
        match name.as_str() {
            "model" => upload.model = Some(value),
            "language" => upload.language = Some(value),
            "prompt" => upload.prompt_chars = value.chars().count(),
            "response_format" => upload.response_format = Some(value),
            "stream" => {
                upload.stream = match value.trim() {
                    "true" => true,
                    "false" => false,
                    other => {
                        return Err(bad(format!(
                            "stream `{}`: expected `true` or `false`",
                            shown(other)
                        )));
                    }
                }
            }
            // temperature, include[], timestamp_granularities[], chunking_strategy, …:
            // accepted, bounded, and without effect on a simulated transcript.
            _ => {}
        }
    }
    let Some((bytes, head)) = file else {
        return Err(bad(
            "no `file` field: send the audio as the multipart field `file` (e.g. \
             curl -F file=@speech.wav)",
        ));
    };
    upload.file_bytes = bytes;
    upload.audio = wav::read(&head, bytes).map_err(bad)?;
    Ok(upload)
}

/// The file's size and its first [`WAV_PREFIX_BYTES`].
async fn read_file(field: &mut Field<'_>) -> Result<(u64, Vec<u8>), Refused> {
    let mut total = 0u64;
    let mut head = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(|e| multipart(&e))? {
        total += chunk.len() as u64;
        if total > MAX_UPLOAD_BYTES as u64 {
            return Err(Refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "file: more than {MAX_UPLOAD_BYTES} bytes, above the cap of \
                     {MAX_UPLOAD_BYTES} bytes per audio file (OpenAI's 25 MB limit)"
                ),
            ));
        }
        let room = WAV_PREFIX_BYTES.saturating_sub(head.len());
        head.extend_from_slice(&chunk[..room.min(chunk.len())]);
    }
    Ok((total, head))
}

/// A text field, at most [`MAX_FORM_FIELD_BYTES`].
async fn read_field(name: &str, field: &mut Field<'_>) -> Result<String, Refused> {
    let mut value = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(|e| multipart(&e))? {
        if value.len() + chunk.len() > MAX_FORM_FIELD_BYTES {
            return Err(Refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "form field `{}`: more than {MAX_FORM_FIELD_BYTES} bytes, the cap per \
                     field other than the file",
                    shown(name)
                ),
            ));
        }
        value.extend_from_slice(&chunk);
    }
    String::from_utf8(value).map_err(|_| bad(format!("form field `{}`: not UTF-8", shown(name))))
}
