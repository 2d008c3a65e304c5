//! The translation conformance suite. For every direction between the four dialects it
//! runs the fixtures in `tests/conformance/` — a rich client request, a provider JSON
//! response and a provider stream per dialect, shaped after the providers' published API
//! references — through the IR and compares the result with the golden file
//! `tests/conformance/golden/<kind>.<from>.<to>.json`. It also checks the round-trip
//! property: a dialect decoded and encoded back into itself decodes to the same IR.
//!
//! Gemini's model is in the URL, not the body: a decoded Gemini request gets the route's
//! model (`any-model`) as the gateway would give it, and a request encoded for Gemini is
//! for a Gemini 3 model, whose thinking level and call signatures the golden files show.
//!
//! After an intended change, `UPDATE_GOLDEN=1 cargo test --test conformance` rewrites the
//! golden files; review their diff like code.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use gateway_core::config::ProviderKind;
use gateway_core::dialect::Dialect;
use gateway_core::translate::{self, stream, Policy, Report};
use serde_json::Value;

const DIALECTS: [Dialect; 4] = [
    Dialect::OpenAiChat,
    Dialect::OpenAiResponses,
    Dialect::AnthropicMessages,
    Dialect::Gemini,
];

/// The model a Gemini-bound request is for (the gateway sets it before encoding).
const GEMINI_MODEL: &str = "gemini-3-pro-preview";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

fn fixture(kind: &str, d: Dialect, ext: &str) -> Vec<u8> {
    std::fs::read(dir().join(kind).join(format!("{}.{ext}", d.as_str()))).unwrap()
}

/// Compares with the golden file, or writes it when UPDATE_GOLDEN is set. Returns a
/// mismatch description instead of panicking so one run reports every failing direction.
fn golden(name: &str, actual: &Value) -> Option<String> {
    let path = dir().join("golden").join(format!("{name}.json"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(actual).unwrap() + "\n").unwrap();
        return None;
    }
    let expected: Value = match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
        Err(_) => return Some(format!("{name}: no golden file at {}", path.display())),
    };
    (expected != *actual).then(|| {
        format!(
            "{name}: differs from its golden file\nexpected: {}\n  actual: {}",
            serde_json::to_string(&expected).unwrap(),
            serde_json::to_string(actual).unwrap()
        )
    })
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

#[test]
fn requests_translate_in_every_direction() {
    let mut failures = Vec::new();
    for from in DIALECTS {
        let ir = translate::decode_request(
            from,
            &fixture("requests", from, "json"),
            Policy::default(),
            &mut Report::new(from),
        )
        .unwrap();
        for to in DIALECTS.into_iter().filter(|to| *to != from) {
            let name = format!("request.{}.{}", from.as_str(), to.as_str());
            let mut ir = ir.clone();
            if from == Dialect::Gemini {
                ir.model = "any-model".into();
            }
            if to == Dialect::Gemini {
                ir.model = GEMINI_MODEL.into();
            }
            if to == Dialect::OpenAiResponses && !ir.stop.is_empty() {
                // Responses has no stop parameter: the request is refused, not trimmed...
                let refused = translate::encode_request(
                    to,
                    &ir,
                    ProviderKind::OpenAi,
                    &mut Report::new(from),
                );
                assert!(
                    refused.is_err_and(|e| e.to_string().contains("stop sequences")),
                    "{name}"
                );
                // ...and without them it translates.
                ir.stop.clear();
            }
            let actual = match translate::encode_request(
                to,
                &ir,
                ProviderKind::OpenAi,
                &mut Report::new(from),
            ) {
                Ok(bytes) => json(&bytes),
                // A refusal is a result too: it is named in the golden file.
                Err(e) => serde_json::json!({"refused": e.to_string()}),
            };
            failures.extend(golden(&name, &actual));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn responses_translate_in_every_direction() {
    let mut failures = Vec::new();
    for from in DIALECTS {
        let ir = translate::decode_response(from, &fixture("responses", from, "json")).unwrap();
        for to in DIALECTS.into_iter().filter(|to| *to != from) {
            let name = format!("response.{}.{}", from.as_str(), to.as_str());
            let mut actual =
                json(&translate::encode_response(to, &ir, 1_741_570_283, &[]).unwrap());
            assert!(actual.is_object());
            // Ids are carried over; nothing in a response depends on the clock but `created`.
            if let Some(obj) = actual.as_object_mut() {
                obj.remove("created");
                obj.remove("created_at");
            }
            failures.extend(golden(&name, &actual));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Runs a provider stream (one data payload per line) through the translator and returns
/// the client's frames as (event name, data) pairs.
fn translate_stream(from: Dialect, to: Dialect, include_usage: bool) -> Vec<Value> {
    let input = fixture("streams", from, "jsonl");
    let mut decoder = stream::Decoder::new(from);
    let mut encoder = stream::Encoder::new(to, include_usage, 1_741_570_283);
    let mut out = Vec::new();
    let mut events = Vec::new();
    for line in input.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        decoder.decode(line, &mut events);
        for e in events.drain(..) {
            encoder.encode(e, &mut out);
        }
    }
    encoder.finish(&mut out);
    // Gemini's frames end in CRLF, as Google's do; the others' in LF.
    String::from_utf8(out)
        .unwrap()
        .replace("\r\n", "\n")
        .split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|frame| {
            let event = frame.lines().find_map(|l| l.strip_prefix("event: "));
            let data = frame
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap();
            let data = if data == "[DONE]" {
                Value::String(data.into())
            } else {
                serde_json::from_str(data).unwrap()
            };
            serde_json::json!({"event": event, "data": data})
        })
        .collect()
}

#[test]
fn streams_translate_in_every_direction() {
    let mut failures = Vec::new();
    for from in DIALECTS {
        for to in DIALECTS.into_iter().filter(|to| *to != from) {
            let name = format!("stream.{}.{}", from.as_str(), to.as_str());
            failures.extend(golden(
                &name,
                &Value::Array(translate_stream(from, to, true)),
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_dialect_round_trips_through_the_ir() {
    for d in DIALECTS {
        let ir = translate::decode_request(
            d,
            &fixture("requests", d, "json"),
            Policy::default(),
            &mut Report::new(d),
        )
        .unwrap();
        match translate::encode_request(d, &ir, ProviderKind::OpenAi, &mut Report::new(d)) {
            Ok(bytes) => assert_eq!(
                translate::decode_request(d, &bytes, Policy::default(), &mut Report::new(d))
                    .unwrap(),
                ir,
                "{}",
                d.as_str()
            ),
            Err(e) => panic!("{} cannot re-encode its own request: {e}", d.as_str()),
        }
        let resp = translate::decode_response(d, &fixture("responses", d, "json")).unwrap();
        let again =
            translate::decode_response(d, &translate::encode_response(d, &resp, 1, &[]).unwrap())
                .unwrap();
        assert_eq!(again.parts, resp.parts, "{}", d.as_str());
        assert_eq!(again.stop, resp.stop, "{}", d.as_str());
        assert_eq!(again.usage, resp.usage, "{}", d.as_str());
    }
}

#[test]
fn tool_calls_and_text_survive_every_stream_direction() {
    for from in DIALECTS {
        for to in DIALECTS.into_iter().filter(|to| *to != from) {
            let frames = translate_stream(from, to, true);
            let all = serde_json::to_string(&frames).unwrap();
            assert!(
                all.contains("read_file"),
                "{} -> {}: tool name lost",
                from.as_str(),
                to.as_str()
            );
            assert!(
                all.contains("parse.rs"),
                "{} -> {}: tool arguments lost",
                from.as_str(),
                to.as_str()
            );
            assert!(
                all.contains("the parser."),
                "{} -> {}: text lost",
                from.as_str(),
                to.as_str()
            );
            assert!(
                all.contains("1024"),
                "{} -> {}: cached-token usage lost",
                from.as_str(),
                to.as_str()
            );
        }
    }
}
