//! Reads what routing needs from an inbound body (`model`, `stream`, `stream_options`)
//! without building the body as a struct, and splices the few edits passthrough makes
//! into the original bytes: everything else — unknown fields, key order, whitespace —
//! reaches the provider as the client sent it.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::WireError;
use crate::scan::{nests_within, whole_object, Scanner, Seen, Unsure, DEPTH};

/// Default cap on the length of a request's `model`, in bytes.
pub const DEFAULT_MAX_MODEL_BYTES: usize = 256;
/// Default cap on how deep arrays and objects nest in a request body.
pub const DEFAULT_MAX_JSON_DEPTH: usize = 128;

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(borrow)]
    stream: Option<&'a RawValue>,
    #[serde(borrow)]
    stream_options: Option<&'a RawValue>,
    #[serde(borrow)]
    temperature: Option<&'a RawValue>,
}

/// What the gateway read from a request body.
#[derive(Debug)]
pub struct Sniffed {
    pub model: String,
    model_span: Range<usize>,
    pub stream: bool,
    stream_options: Option<(Range<usize>, String)>,
    /// `temperature`, when it is a number (the response cache's test of determinism).
    pub temperature: Option<f64>,
    /// Where the first user message's `content` sits (or a Responses `input` that is one
    /// string), as raw JSON: what every turn of a conversation repeats, so a session can be
    /// told by it. `None` when there is none, or the body was not read by the scanner.
    pub first_user: Option<Range<usize>>,
}

/// Where `inner` (a sub-slice of `outer`) sits within it.
fn span_of(outer: &[u8], inner: &str) -> Range<usize> {
    let start = (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize);
    start..start + inner.len()
}

/// How much a body may hold of what is sniffed.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Longest `model`, in bytes.
    pub model_bytes: usize,
    /// Deepest nesting of arrays and objects (the top object is one level).
    pub json_depth: usize,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        model_bytes: DEFAULT_MAX_MODEL_BYTES,
        json_depth: DEFAULT_MAX_JSON_DEPTH,
    };
}

/// Reads `model` and `stream` from `body`, within the default [`Limits`].
pub fn sniff(body: &[u8]) -> Result<Sniffed, WireError> {
    sniff_within(body, Limits::DEFAULT)
}

/// Reads `model` and `stream` from `body`. A body that is not a JSON object, or nests
/// deeper than `limits` allow, or whose `model` is missing, not a string or too long, or
/// whose `stream` is not a boolean, is the client's error.
pub fn sniff_within(body: &[u8], limits: Limits) -> Result<Sniffed, WireError> {
    let (text, scanned) = checked(body, limits)?;
    sniffed_from(body, text, scanned, limits)
}

/// Reads a body whose model and stream the request's path names (Gemini's
/// `models/{model}:streamGenerateContent`): the body is checked as [`sniff_within`]
/// checks it, and a `model` or `stream` in it is not the request's.
pub fn sniff_for_model(
    body: &[u8],
    limits: Limits,
    model: &str,
    stream: bool,
) -> Result<Sniffed, WireError> {
    let (_, scanned) = checked(body, limits)?;
    model_within(model, limits)?;
    let first_user = match scanned {
        Ok((_, first_user)) => first_user,
        // What the scanner left to serde, serde checks.
        Err(Unsure) => {
            serde_json::from_slice::<serde::de::IgnoredAny>(body)
                .map_err(|e| WireError::InvalidJson(e.to_string()))?;
            None
        }
    };
    Ok(Sniffed {
        model: model.to_owned(),
        model_span: 0..0,
        stream,
        stream_options: None,
        temperature: None,
        first_user,
    })
}

/// A model name the gateway takes: not empty, within the length limit.
fn model_within(model: &str, limits: Limits) -> Result<(), WireError> {
    if model.is_empty() {
        return Err(WireError::InvalidField {
            param: "model",
            message: "`model` must not be empty".into(),
        });
    }
    if model.len() > limits.model_bytes {
        return Err(WireError::InvalidField {
            param: "model",
            message: format!(
                "`model` is {} bytes, longer than the gateway's limit of {}",
                model.len(),
                limits.model_bytes
            ),
        });
    }
    Ok(())
}

/// A body that is UTF-8, a JSON object, and nests within the limit, with what the scanner
/// found in it.
fn checked(body: &[u8], limits: Limits) -> Result<(&str, Result<Spans, Unsure>), WireError> {
    // serde_json skips the fields it ignores without checking their UTF-8, so check the
    // whole body here: JSON is UTF-8, and a provider would reject it anyway.
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(e) => {
            return Err(WireError::InvalidJson(format!(
                "the body is not UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            )))
        }
    };
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err(WireError::InvalidJson(
            "expected a JSON object at the top level".into(),
        ));
    }
    let scanned = spans(body);
    // A body the scanner read nests at most `DEPTH + 1` levels; any other is measured.
    if (scanned.is_err() || limits.json_depth <= DEPTH) && !nests_within(body, limits.json_depth) {
        return Err(WireError::InvalidJson(format!(
            "arrays and objects nest deeper than the gateway's limit of {} levels",
            limits.json_depth
        )));
    }
    Ok((text, scanned))
}

fn sniffed_from(
    body: &[u8],
    text: &str,
    scanned: Result<Spans, Unsure>,
    limits: Limits,
) -> Result<Sniffed, WireError> {
    let (spans, first_user) = match scanned {
        Ok((spans, first_user)) => (Ok(spans), first_user),
        Err(Unsure) => (Err(Unsure), None),
    };
    let [model, stream, stream_options, temperature] = match spans {
        Ok(spans) => spans.map(|span| span.and_then(|r| text.get(r))),
        Err(Unsure) => {
            let peek: Peek<'_> =
                serde_json::from_slice(body).map_err(|e| WireError::InvalidJson(e.to_string()))?;
            [
                peek.model,
                peek.stream,
                peek.stream_options,
                peek.temperature,
            ]
            .map(|raw| raw.map(RawValue::get))
        }
    };
    let Some(raw_model) = model else {
        return Err(WireError::InvalidField {
            param: "model",
            message: "missing required field `model`".into(),
        });
    };
    let model: Cow<'_, str> = match serde_json::from_str(raw_model) {
        Ok(m) => m,
        Err(_) => {
            return Err(WireError::InvalidField {
                param: "model",
                message: format!("`model` must be a string, got {raw_model}"),
            })
        }
    };
    model_within(&model, limits)?;
    let stream = match stream {
        None | Some("null") | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(WireError::InvalidField {
                param: "stream",
                message: format!("`stream` must be a boolean, got {other}"),
            })
        }
    };
    Ok(Sniffed {
        model: model.into_owned(),
        model_span: span_of(body, raw_model),
        stream,
        stream_options: stream_options.map(|raw| (span_of(body, raw), raw.to_owned())),
        temperature: temperature.and_then(|raw| raw.parse::<f64>().ok()),
        first_user,
    })
}

/// Where `model`, `stream`, `stream_options` and `temperature` sit in a body (`None` for
/// an absent or `null` one), found by reading the bytes directly, with the whole body's
/// syntax checked as serde_json checks it; `Unsure` for anything serde should decide
/// (see [`crate::scan`]), including every body serde would refuse.
type Spans = ([Option<Range<usize>>; 4], Option<Range<usize>>);

fn spans(body: &[u8]) -> Result<Spans, Unsure> {
    let mut found: [Option<Range<usize>>; 4] = Default::default();
    let mut first_user = None;
    let mut seen = Seen::default();
    whole_object(body, |s, key| {
        let field = match key {
            b"model" => 0,
            b"stream" => 1,
            b"stream_options" => 2,
            b"temperature" => 3,
            // Read as they are skipped: the same bytes checked, one span kept.
            b"messages" | b"input" | b"contents" if first_user.is_none() => {
                return first_user_of(s, &mut first_user)
            }
            _ => return s.skip_value(0),
        };
        seen.first(field as u32)?;
        let start = s.position();
        s.skip_value(0)?;
        let span = start..s.position();
        if &body[span.clone()] != b"null" {
            found[field] = Some(span);
        }
        Ok(())
    })?;
    Ok((found, first_user))
}

/// Skips the `messages`, `input` or (Gemini) `contents` value at the cursor, noting where
/// the first user message's `content` (Gemini: `parts`) is, or the value itself when it is
/// one string.
fn first_user_of(s: &mut Scanner<'_>, out: &mut Option<Range<usize>>) -> Result<(), Unsure> {
    let start = s.position();
    match s.peek() {
        Some(b'"') => {
            s.skip_value(0)?;
            *out = Some(start..s.position());
            Ok(())
        }
        Some(b'[') => {
            s.expect(b'[')?;
            s.ws();
            if s.eat(b']') {
                return Ok(());
            }
            loop {
                if out.is_some() || s.peek() != Some(b'{') {
                    s.skip_value(1)?;
                } else {
                    s.expect(b'{')?;
                    let (mut user, mut content) = (false, None);
                    s.members(|s, key| match key {
                        b"role" => {
                            user = s.str_or_null()? == Some("user");
                            Ok(())
                        }
                        b"content" | b"parts" => {
                            let at = s.position();
                            s.skip_value(2)?;
                            content = Some(at..s.position());
                            Ok(())
                        }
                        _ => s.skip_value(2),
                    })?;
                    if user {
                        *out = content;
                    }
                }
                s.ws();
                if s.eat(b']') {
                    return Ok(());
                }
                s.expect(b',')?;
                s.ws();
            }
        }
        _ => s.skip_value(0),
    }
}

/// The edits passthrough may make, collected and applied in one copy.
#[derive(Debug, Default)]
pub struct Edits {
    edits: Vec<(Range<usize>, Vec<u8>)>,
    /// The gateway asked an OpenAI Chat stream for a usage chunk the client did not ask for.
    pub injected_usage: bool,
}

impl Edits {
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// Adds replacements for other spans of the same body (the optimizer's).
    pub fn extend(&mut self, edits: Vec<(Range<usize>, Vec<u8>)>) {
        self.edits.extend(edits);
    }

    /// Sends `model` upstream in place of the client's model name.
    pub fn rewrite_model(&mut self, sniffed: &Sniffed, model: &str) {
        let encoded = serde_json::to_vec(model).unwrap_or_default();
        self.edits.push((sniffed.model_span.clone(), encoded));
    }

    /// Makes an OpenAI Chat stream report usage (`stream_options.include_usage`), so the
    /// record stage gets provider-reported tokens. Returns without an edit when the client
    /// already asked for it or sent `stream_options` of a shape we should not touch.
    pub fn request_stream_usage(&mut self, body: &[u8], sniffed: &Sniffed) {
        match &sniffed.stream_options {
            None => {
                let Some(open) = body.iter().position(|b| *b == b'{') else {
                    return;
                };
                let at = open + 1;
                self.edits.push((
                    at..at,
                    br#""stream_options":{"include_usage":true},"#.to_vec(),
                ));
                self.injected_usage = true;
            }
            Some((span, raw)) => {
                let mut options = match serde_json::from_str::<serde_json::Value>(raw) {
                    Ok(serde_json::Value::Object(map)) => map,
                    Ok(serde_json::Value::Null) => serde_json::Map::new(),
                    _ => return,
                };
                if options.get("include_usage") == Some(&serde_json::Value::Bool(true)) {
                    return;
                }
                options.insert("include_usage".into(), serde_json::Value::Bool(true));
                let encoded = serde_json::to_vec(&options).unwrap_or_default();
                self.edits.push((span.clone(), encoded));
                self.injected_usage = true;
            }
        }
    }

    /// The body with every edit spliced in; the original bytes when there are none.
    pub fn apply(mut self, body: Bytes) -> Bytes {
        if self.edits.is_empty() {
            return body;
        }
        self.edits.sort_by_key(|(span, _)| span.start);
        let extra: usize = self.edits.iter().map(|(_, b)| b.len()).sum();
        let mut out = Vec::with_capacity(body.len() + extra);
        let mut at = 0;
        for (span, bytes) in &self.edits {
            out.extend_from_slice(&body[at..span.start]);
            out.extend_from_slice(bytes);
            at = span.end;
        }
        out.extend_from_slice(&body[at..]);
        Bytes::from(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_whose_path_names_the_model_is_checked_and_its_first_user_parts_found() {
        let body = br#"{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"yo"}]}]}"#;
        let s = sniff_for_model(body, Limits::DEFAULT, "gemini-2.5-pro", true).unwrap();
        assert_eq!(s.model, "gemini-2.5-pro");
        assert!(s.stream);
        assert_eq!(&body[s.first_user.clone().unwrap()], br#"[{"text":"hi"}]"#);
        // The same checks as any body: JSON, an object, nesting, the model's length.
        assert!(sniff_for_model(b"{not json", Limits::DEFAULT, "m", false).is_err());
        assert!(sniff_for_model(b"[1]", Limits::DEFAULT, "m", false).is_err());
        assert!(sniff_for_model(b"{}", Limits::DEFAULT, "", false).is_err());
        let long = "m".repeat(DEFAULT_MAX_MODEL_BYTES + 1);
        assert!(sniff_for_model(b"{}", Limits::DEFAULT, &long, false).is_err());
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(200), "]".repeat(200));
        assert!(sniff_for_model(deep.as_bytes(), Limits::DEFAULT, "m", false).is_err());
    }

    /// The kind of refusal, as the gateway's metrics name it.
    fn kind_of(e: &WireError) -> &'static str {
        match e {
            WireError::InvalidJson(_) => "invalid_json",
            WireError::InvalidField { .. } => "invalid_field",
            WireError::Untranslatable { .. } => "untranslatable",
        }
    }

    #[test]
    fn reads_model_and_stream_and_ignores_everything_else() {
        let body = br#"{"messages":[{"role":"user","content":"hi"}],"stream":true,"model":"gpt-5","x":{"model":"no"}}"#;
        let s = sniff(body).unwrap();
        assert_eq!((s.model.as_str(), s.stream), ("gpt-5", true));
    }

    #[test]
    fn rewriting_the_model_changes_only_its_bytes() {
        let body = Bytes::from_static(b"{ \"z\" : 1,\n  \"model\" :  \"fast\" , \"a\":[1,2] }");
        let s = sniff(&body).unwrap();
        let mut edits = Edits::default();
        edits.rewrite_model(&s, "gpt-5-mini");
        let out = edits.apply(body);
        assert_eq!(
            &out[..],
            b"{ \"z\" : 1,\n  \"model\" :  \"gpt-5-mini\" , \"a\":[1,2] }"
        );
    }

    #[test]
    fn deep_nesting_and_long_models_are_refused() {
        let deep = |levels: usize| {
            let mut body = String::from(r#"{"model":"m","x":"#);
            body.push_str(&"[".repeat(levels - 1));
            body.push_str(&"]".repeat(levels - 1));
            body.push('}');
            body
        };
        assert!(sniff(deep(128).as_bytes()).is_ok());
        let err = sniff(deep(129).as_bytes()).err().map(|e| kind_of(&e));
        assert_eq!(err, Some("invalid_json"));
        assert!(sniff(deep(200_000).as_bytes()).is_err());
        // Brackets in strings do not count, escaped quotes do not end them.
        let quoted = format!(r#"{{"model":"m","x":"\"{}"}}"#, "[".repeat(500));
        assert!(sniff(quoted.as_bytes()).is_ok());
        let tight = Limits {
            json_depth: 2,
            ..Limits::DEFAULT
        };
        assert!(sniff_within(br#"{"model":"m","x":[1]}"#, tight).is_ok());
        assert!(sniff_within(br#"{"model":"m","x":[[1]]}"#, tight).is_err());

        let long = format!(r#"{{"model":"{}"}}"#, "m".repeat(257));
        let err = sniff(long.as_bytes()).err();
        assert!(matches!(
            err,
            Some(WireError::InvalidField { param: "model", .. })
        ));
        let fits = format!(r#"{{"model":"{}"}}"#, "m".repeat(256));
        assert!(sniff(fits.as_bytes()).is_ok());
    }

    #[test]
    fn escaped_model_names_are_decoded() {
        let s = sniff(br#"{"model":"gpt\u002d5"}"#).unwrap();
        assert_eq!(s.model, "gpt-5");
    }

    #[test]
    fn no_edits_returns_the_same_bytes() {
        let body = Bytes::from_static(br#"{"model":"m"}"#);
        let out = Edits::default().apply(body.clone());
        assert_eq!(out.as_ptr(), body.as_ptr());
    }

    #[test]
    fn stream_usage_is_injected_or_merged() {
        let body = Bytes::from_static(br#"{"model":"m","stream":true}"#);
        let s = sniff(&body).unwrap();
        let mut e = Edits::default();
        e.request_stream_usage(&body, &s);
        assert!(e.injected_usage);
        let out = e.apply(body);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["stream_options"]["include_usage"], true);

        let body = Bytes::from_static(
            br#"{"model":"m","stream":true,"stream_options":{"include_obfuscation":false}}"#,
        );
        let s = sniff(&body).unwrap();
        let mut e = Edits::default();
        e.request_stream_usage(&body, &s);
        let out = e.apply(body);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["stream_options"]["include_obfuscation"], false);

        let body = Bytes::from_static(
            br#"{"model":"m","stream":true,"stream_options":{"include_usage":true}}"#,
        );
        let s = sniff(&body).unwrap();
        let mut e = Edits::default();
        e.request_stream_usage(&body, &s);
        assert!(!e.injected_usage && e.is_empty());
    }

    /// Found by the `sniff_edit` fuzz target: invalid UTF-8 inside a field the sniffer
    /// skips used to pass as JSON.
    #[test]
    fn invalid_utf8_anywhere_is_refused() {
        let body = include_bytes!(
            "../../../gateway-core/fuzz/regressions/sniff_edit/invalid-utf8-in-ignored-string"
        );
        assert_eq!(sniff(body).err().map(|e| kind_of(&e)), Some("invalid_json"));
    }

    #[test]
    fn bad_bodies_are_client_errors() {
        for (body, label) in [
            (&b"not json"[..], "invalid_json"),
            (b"[1,2]", "invalid_json"),
            (b"{\"model\":\"m\"", "invalid_json"),
            (b"{\"messages\":[]}", "invalid_field"),
            (b"{\"model\":42}", "invalid_field"),
            (b"{\"model\":\"\"}", "invalid_field"),
            (b"{\"model\":\"m\",\"stream\":\"yes\"}", "invalid_field"),
        ] {
            let err = sniff(body).err().map(|e| kind_of(&e));
            assert_eq!(err, Some(label), "{}", String::from_utf8_lossy(body));
        }
    }

    /// The direct reader finds what serde finds, wherever it answers, and answers for the
    /// bodies clients send.
    #[test]
    fn the_direct_reader_agrees_with_serde() {
        // Each field's raw JSON text, owned so the answers outlive the bodies.
        fn by_serde(body: &[u8]) -> Option<[Option<String>; 4]> {
            let peek: Peek<'_> = serde_json::from_slice(body).ok()?;
            Some(
                [
                    peek.model,
                    peek.stream,
                    peek.stream_options,
                    peek.temperature,
                ]
                .map(|raw| raw.map(|raw| raw.get().to_owned())),
            )
        }
        fn direct(body: &[u8]) -> Option<[Option<String>; 4]> {
            let text = std::str::from_utf8(body).ok()?;
            let spans = spans(body).ok()?.0;
            Some(spans.map(|span| span.map(|r| text[r].to_owned())))
        }
        for client_shaped in [
            &br#"{"model":"gpt-5-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Fix the \"parser\"\n\u00e9"}],"stream":true,"stream_options":{"include_usage":false},"temperature":0.2}"#[..],
            br#"{"model":"claude-x","max_tokens":256,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}"#,
            b" {\n  \"input\": \"hi\",\n  \"model\" : \"gpt-5\", \"stream\": null }\n",
        ] {
            assert!(direct(client_shaped).is_some());
            assert_eq!(direct(client_shaped), by_serde(client_shaped));
        }
        const TOP: &[&str] = &[
            "model",
            "messages",
            "stream",
            "stream_options",
            "temperature",
            "tools",
            "model",
            "mod\\u0065l",
        ];
        const INNER: &[&str] = &["role", "content", "type", "text", "include_usage", "model"];
        // Bodies that are not UTF-8 give `direct` nothing: sniff refuses them before
        // either reader runs.
        let answered = crate::scan::random::agreement(
            0x9e37_79b9_7f4a_7c15,
            20_000,
            TOP,
            INNER,
            direct,
            by_serde,
        );
        assert!(answered > 2_000, "the reader answered {answered}");
    }
}
