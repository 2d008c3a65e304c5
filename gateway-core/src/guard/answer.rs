//! Putting the values back into an answer in the bytes the client receives: a whole JSON
//! body ([`restore_whole`]), or an SSE stream ([`SseRestorer`]) whose text arrives in
//! deltas that may split a placeholder anywhere, in each of the four client dialects.
//!
//! A string is restored as what it holds. A tool call's arguments (`arguments`, and
//! Anthropic's `partial_json` while they stream) are JSON text, so a value goes in
//! JSON-escaped and the arguments still parse; every other string is text, and a value
//! goes in as it is. Anthropic's `tool_use.input` and Gemini's `functionCall.args` are
//! JSON objects already: their strings are text, whatever their keys. Keys are never
//! touched.
//!
//! What has nothing to restore goes on byte for byte: a body without one of the scope's
//! placeholders is left alone, and so is every stream event whose strings come out the
//! same. Only this scope's placeholders are restored ([`Values`]); another scope's, or
//! one a user typed, stays as it is.

use std::collections::HashMap;

use memchr::memmem;
use serde_json::Value;

use super::placeholder::PREFIX;
use super::restore::{Escape, StreamRestorer, Values};
use crate::dialect::Dialect;
use crate::sse::{frame_data, scan, Scan};

/// A stream frame longer than this goes on as it is, unread and unbuffered. Text deltas
/// are a few bytes and a whole answer's closing event rarely a few hundred KiB; a frame
/// this large is media (Gemini streams images inline), which holds no placeholder, and
/// buffering it whole would only cost memory and delay.
const MAX_FRAME: usize = 4 << 20;

/// `body` (a whole JSON answer, or an error body) with this scope's placeholders replaced
/// by their values; `None` when it is to go on as it is: nothing to restore, not JSON, or
/// no string changed. A changed body is written again by serde_json (keys in its order,
/// numbers as it writes them), which every client reads as the same JSON.
pub fn restore_whole(values: &Values, body: &[u8]) -> Option<Vec<u8>> {
    if values.is_empty() || memmem::find(body, PREFIX.as_bytes()).is_none() {
        return None;
    }
    let mut json: Value = serde_json::from_slice(body).ok()?;
    if !restore_strings(values, &mut json) {
        return None;
    }
    serde_json::to_vec(&json).ok()
}

/// Restores every string in `json`, each as what it holds (see the module's doc). Says
/// whether any changed.
fn restore_strings(values: &Values, json: &mut Value) -> bool {
    walk(values, json, Escape::Plain, false)
}

/// One value of the walk: `escape` is how a string here is written, `data` that this is
/// inside a tool call's own arguments object, where a key names nothing of the dialect
/// (an argument may well be called `arguments`). serde_json bounds the nesting it parses,
/// so the recursion is bounded too.
fn walk(values: &Values, json: &mut Value, escape: Escape, data: bool) -> bool {
    match json {
        Value::String(text) => restore_string(values, text, escape),
        Value::Array(items) => items.iter_mut().fold(false, |changed, item| {
            walk(values, item, Escape::Plain, data) | changed
        }),
        Value::Object(map) => map.iter_mut().fold(false, |changed, (key, item)| {
            let (escape, data) = match key.as_str() {
                _ if data => (Escape::Plain, true),
                "arguments" | "partial_json" if item.is_string() => (Escape::Json, false),
                "input" | "args" if item.is_object() || item.is_array() => (Escape::Plain, true),
                _ => (Escape::Plain, false),
            };
            walk(values, item, escape, data) | changed
        }),
        _ => false,
    }
}

/// Restores one string in place; says whether it changed.
fn restore_string(values: &Values, text: &mut String, escape: Escape) -> bool {
    if memmem::find(text.as_bytes(), PREFIX.as_bytes()).is_none() {
        return false;
    }
    let restored = values.restore(text, escape);
    if restored == *text {
        return false;
    }
    *text = restored;
    true
}

/// A step into a JSON value, to find a delta's string again in its event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Key(&'static str),
    Index(usize),
}

/// The string at `path` in `json`, if there is one.
fn string_at<'a>(json: &'a mut Value, path: &[Step]) -> Option<&'a mut String> {
    let mut at = json;
    for step in path {
        at = match *step {
            Step::Key(key) => at.get_mut(key)?,
            Step::Index(index) => at.get_mut(index)?,
        };
    }
    match at {
        Value::String(text) => Some(text),
        _ => None,
    }
}

/// A piece of a streamed text in one event.
#[derive(Debug)]
struct Delta {
    /// The text it continues: a choice's content, a tool call's arguments, a block's
    /// thinking. Named per dialect; only equality matters.
    channel: String,
    /// Where the piece is in the event's JSON.
    path: Vec<Step>,
    /// How a value is written into it.
    escape: Escape,
    /// The same event ends that text (Chat's `finish_reason`, Gemini's `finishReason`).
    ends: bool,
}

/// The streamed texts' pieces in one event of `dialect`, in the order they are read.
fn deltas_of(dialect: Dialect, json: &Value) -> Vec<Delta> {
    let mut out = Vec::new();
    match dialect {
        Dialect::OpenAiChat => chat_deltas(json, &mut out),
        Dialect::OpenAiResponses => responses_delta(json, &mut out),
        Dialect::AnthropicMessages => anthropic_delta(json, &mut out),
        Dialect::Gemini => gemini_deltas(json, &mut out),
    }
    out
}

/// The `index` an item gives itself, or its place in the array.
fn index_of(item: &Value, position: usize) -> String {
    item.get("index")
        .and_then(Value::as_u64)
        .map_or_else(|| position.to_string(), |index| index.to_string())
}

fn array<'a>(json: &'a Value, key: &str) -> &'a [Value] {
    json.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The text fields of a Chat chunk's `delta` (`reasoning_content` is DeepSeek's and
/// others', `reasoning` vLLM's and OpenRouter's).
const CHAT_TEXTS: [&str; 4] = ["content", "reasoning_content", "reasoning", "refusal"];

/// Chat: `choices[i].delta`'s texts, and each tool call's `function.arguments` (named by
/// the call's `index`, which is how Chat says which call a piece belongs to).
fn chat_deltas(json: &Value, out: &mut Vec<Delta>) {
    for (i, choice) in array(json, "choices").iter().enumerate() {
        let Some(delta) = choice.get("delta") else {
            continue;
        };
        let n = index_of(choice, i);
        let ends = choice.get("finish_reason").is_some_and(|r| !r.is_null());
        let path = |rest: &[Step]| {
            [
                &[Step::Key("choices"), Step::Index(i), Step::Key("delta")][..],
                rest,
            ]
            .concat()
        };
        for field in CHAT_TEXTS {
            if delta.get(field).is_some_and(Value::is_string) {
                out.push(Delta {
                    channel: format!("{n}/{field}"),
                    path: path(&[Step::Key(field)]),
                    escape: Escape::Plain,
                    ends,
                });
            }
        }
        // The deprecated single `function_call`, streamed as tool calls are.
        let legacy = delta.get("function_call").and_then(|f| f.get("arguments"));
        if legacy.is_some_and(Value::is_string) {
            out.push(Delta {
                channel: format!("{n}/function_call"),
                path: path(&[Step::Key("function_call"), Step::Key("arguments")]),
                escape: Escape::Json,
                ends,
            });
        }
        for (k, call) in array(delta, "tool_calls").iter().enumerate() {
            let arguments = call.get("function").and_then(|f| f.get("arguments"));
            if arguments.is_some_and(Value::is_string) {
                out.push(Delta {
                    channel: format!("{n}/tool/{}", index_of(call, k)),
                    path: path(&[
                        Step::Key("tool_calls"),
                        Step::Index(k),
                        Step::Key("function"),
                        Step::Key("arguments"),
                    ]),
                    escape: Escape::Json,
                    ends,
                });
            }
        }
    }
}

/// Responses: the `*.delta` events of texts (their `.done` twins and the items carry the
/// whole text, which the walk restores). An item's text is named by `item_id` and the
/// part it is in.
fn responses_delta(json: &Value, out: &mut Vec<Delta>) {
    let (lane, escape) = match json.get("type").and_then(Value::as_str) {
        Some("response.output_text.delta") => ("text", Escape::Plain),
        Some("response.refusal.delta") => ("refusal", Escape::Plain),
        Some("response.reasoning_text.delta") => ("reasoning", Escape::Plain),
        Some("response.reasoning_summary_text.delta") => ("summary", Escape::Plain),
        Some("response.function_call_arguments.delta") => ("arguments", Escape::Json),
        // A freeform (custom) tool's input is plain text, not JSON.
        Some("response.custom_tool_call_input.delta") => ("input", Escape::Plain),
        _ => return,
    };
    if !json.get("delta").is_some_and(Value::is_string) {
        return;
    }
    let item = match json.get("item_id").and_then(Value::as_str) {
        Some(id) => id.to_owned(),
        None => format!("#{}", json.get("output_index").unwrap_or(&Value::Null)),
    };
    let part = json
        .get("content_index")
        .or_else(|| json.get("summary_index"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    out.push(Delta {
        channel: format!("{item}/{part}/{lane}"),
        path: vec![Step::Key("delta")],
        escape,
        ends: false,
    });
}

/// Anthropic: a `content_block_delta`'s text, thinking or `partial_json`, named by the
/// block's `index` (its `content_block_stop` is another event, which ends it).
fn anthropic_delta(json: &Value, out: &mut Vec<Delta>) {
    if json.get("type").and_then(Value::as_str) != Some("content_block_delta") {
        return;
    }
    let Some(delta) = json.get("delta") else {
        return;
    };
    let (field, escape) = match delta.get("type").and_then(Value::as_str) {
        Some("text_delta") => ("text", Escape::Plain),
        Some("thinking_delta") => ("thinking", Escape::Plain),
        Some("input_json_delta") => ("partial_json", Escape::Json),
        _ => return,
    };
    if delta.get(field).is_some_and(Value::is_string) {
        out.push(Delta {
            channel: format!("{}/{field}", index_of(json, 0)),
            path: vec![Step::Key("delta"), Step::Key(field)],
            escape,
            ends: false,
        });
    }
}

/// Gemini: each candidate's text parts, thoughts apart from the answer. A call comes
/// whole (`functionCall.args`), so the walk restores it.
fn gemini_deltas(json: &Value, out: &mut Vec<Delta>) {
    for (c, candidate) in array(json, "candidates").iter().enumerate() {
        let n = index_of(candidate, c);
        let ends = candidate
            .get("finishReason")
            .or_else(|| candidate.get("finish_reason"))
            .is_some_and(|r| !r.is_null());
        let parts = candidate
            .get("content")
            .map_or(&[][..], |c| array(c, "parts"));
        for (j, part) in parts.iter().enumerate() {
            if !part.get("text").is_some_and(Value::is_string) {
                continue;
            }
            let lane = match part.get("thought").and_then(Value::as_bool) {
                Some(true) => "thought",
                _ => "text",
            };
            out.push(Delta {
                channel: format!("{n}/{lane}"),
                path: vec![
                    Step::Key("candidates"),
                    Step::Index(c),
                    Step::Key("content"),
                    Step::Key("parts"),
                    Step::Index(j),
                    Step::Key("text"),
                ],
                escape: Escape::Plain,
                ends,
            });
        }
    }
}

/// One SSE event read as JSON.
struct Frame {
    /// Its bytes as they came, blank line included: what goes on when nothing changed.
    raw: Vec<u8>,
    data: Value,
    /// The walk changed a whole string in `data`.
    walked: bool,
    /// Each piece's place and text as it came. A piece is compared when the event goes:
    /// a tail held and then given back unchanged (a text cut off in `TRIMGATE_SEC`) leaves
    /// the event as it came, and it goes on byte for byte.
    pieces: Vec<(Vec<Step>, String)>,
}

impl Frame {
    /// Appends `tail` to the string at `path`.
    fn append(&mut self, path: &[Step], tail: &str) {
        if let Some(text) = string_at(&mut self.data, path) {
            text.push_str(tail);
        }
    }

    /// Whether a string in `data` differs from what `raw` says.
    fn changed(&mut self) -> bool {
        let Frame {
            data,
            walked,
            pieces,
            ..
        } = self;
        *walked
            || pieces
                .iter()
                .any(|(path, piece)| string_at(data, path).is_some_and(|now| now != piece))
    }

    /// Writes the event: as it came if nothing changed, else its lines as they were with
    /// one `data:` line of the new JSON where the first data line stood.
    fn write(mut self, out: &mut Vec<u8>) {
        if !self.changed() {
            out.extend_from_slice(&self.raw);
            return;
        }
        let Ok(data) = serde_json::to_vec(&self.data) else {
            // Serializing a `Value` does not fail; were it to, the event goes on as it came.
            out.extend_from_slice(&self.raw);
            return;
        };
        // The event's own line ending (Gemini's are `\r\n`), so a client that splits on
        // one kind only still finds this event's end.
        let eol: &[u8] = if memmem::find(&self.raw, b"\r\n").is_some() {
            b"\r\n"
        } else {
            b"\n"
        };
        // Blank lines before the event (an extra one after the last) stay as they were.
        let lead = self
            .raw
            .iter()
            .take_while(|b| **b == b'\n' || **b == b'\r')
            .count();
        out.extend_from_slice(self.raw.get(..lead).unwrap_or_default());
        let mut data = Some(data);
        for line in self.raw.split(|b| *b == b'\n' || *b == b'\r') {
            if line.is_empty() {
                continue;
            }
            if line == b"data" || line.starts_with(b"data:") {
                let Some(data) = data.take() else {
                    continue;
                };
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(&data);
            } else {
                out.extend_from_slice(line);
            }
            out.extend_from_slice(eol);
        }
        out.extend_from_slice(eol);
    }
}

/// The event kept back while a channel's tail could still become a placeholder.
struct Held {
    frame: Frame,
    /// The channels whose tail waits, each with where its last piece is in the event.
    tails: Vec<(String, Vec<Step>)>,
}

/// Restores an SSE answer as it streams, for a client of `dialect`: pushed the body's
/// chunks as they come (cut anywhere, even inside a line or a character), it gives back
/// whole events, restored.
///
/// An event with nothing to restore goes on byte for byte. One whose text ends in what
/// could still become one of the scope's placeholders is held back (one event at most)
/// until the next event says: if that one goes on with the same text, the held event
/// goes without the tail and the tail goes on at the start of the next one's piece;
/// otherwise the tail, restored as far as it can be, goes back at the end of the held
/// event's piece. No event is ever made up (Responses events are numbered), and none
/// waits but for a tail. Keep-alives (comments, Anthropic's `ping`) go on at once, ahead
/// of a held event, so they do not end a text a placeholder is split across.
pub struct SseRestorer {
    dialect: Dialect,
    values: Values,
    /// A restorer per streamed text, by channel.
    channels: HashMap<String, StreamRestorer>,
    /// The bytes of the next event, not yet whole.
    pending: Vec<u8>,
    /// Where the scan for the end of the pending event resumes.
    scanned: usize,
    /// The pending event outgrew [`MAX_FRAME`]: its bytes go on as they come, to its end.
    oversized: bool,
    held: Option<Held>,
}

impl SseRestorer {
    pub fn new(dialect: Dialect, values: Values) -> SseRestorer {
        SseRestorer {
            dialect,
            values,
            channels: HashMap::new(),
            pending: Vec::new(),
            scanned: 0,
            oversized: false,
            held: None,
        }
    }

    /// The next chunk of the body; returns what to send now: whole events only (with no
    /// values to restore, the chunk as it came).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        if self.values.is_empty() {
            // Nothing to restore: the body goes on as it comes.
            out.extend_from_slice(chunk);
            return out;
        }
        self.pending.extend_from_slice(chunk);
        let mut start = 0;
        loop {
            let found = scan(&self.pending, self.scanned);
            if self.oversized {
                let (end, done) = match found {
                    Scan::End(end) => (end, true),
                    // The bytes before where the scan resumes are not part of an end.
                    Scan::More(resume) => (resume, false),
                };
                out.extend_from_slice(self.pending.get(start..end).unwrap_or_default());
                (start, self.scanned, self.oversized) = (end, end, !done);
                if done {
                    continue;
                }
                break;
            }
            match found {
                // A `\r` last in the buffer ends an event as the SSE spec reads it, but
                // is most often half of a `\r\n`: that event waits for the next byte, so
                // a `\r\n\r\n` cut in two still ends one event and not two (a client
                // that splits on `\r\n\r\n` only would not find the end otherwise).
                Scan::End(end) if end == self.pending.len() && self.pending.ends_with(b"\r") => {
                    break;
                }
                Scan::End(end) => {
                    let raw = self.pending.get(start..end).unwrap_or_default().to_vec();
                    (start, self.scanned) = (end, end);
                    self.event(raw, &mut out);
                }
                Scan::More(resume) => {
                    self.scanned = resume;
                    if self.pending.len() - start <= MAX_FRAME {
                        break;
                    }
                    // Too large to be a text's event: it ends whatever is held.
                    self.release(&[], &mut out);
                    self.oversized = true;
                }
            }
        }
        self.pending.drain(..start);
        self.scanned -= start;
        out
    }

    /// The body has ended: what is held, its tail restored as far as it can be, then any
    /// bytes of an event never finished, as they came.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        // An event whose `\r` ended the body (see `push`) is whole now.
        if !self.oversized {
            if let Scan::End(end) = scan(&self.pending, self.scanned) {
                let raw: Vec<u8> = self.pending.drain(..end).collect();
                self.event(raw, &mut out);
            }
        }
        self.release(&[], &mut out);
        out.append(&mut self.pending);
        self.scanned = 0;
        self.oversized = false;
        out
    }

    /// One whole event, blank line included.
    fn event(&mut self, raw: Vec<u8>, out: &mut Vec<u8>) {
        let Some(data) = frame_data(&raw) else {
            // A comment or an event without data: a keep-alive, with nothing to restore.
            out.extend_from_slice(&raw);
            return;
        };
        let parsed = match data.len() {
            len if len > MAX_FRAME => None,
            _ => serde_json::from_slice::<Value>(&data).ok(),
        };
        let Some(data) = parsed else {
            // `[DONE]`, or not JSON: it ends what is held, and goes on as it came.
            self.release(&[], out);
            out.extend_from_slice(&raw);
            return;
        };
        if self.dialect == Dialect::AnthropicMessages
            && data.get("type").and_then(Value::as_str) == Some("ping")
        {
            out.extend_from_slice(&raw);
            return;
        }
        let deltas = deltas_of(self.dialect, &data);
        self.release(&deltas, out);
        let frame = Frame {
            raw,
            data,
            walked: false,
            pieces: Vec::new(),
        };
        self.restore(frame, &deltas, out);
    }

    /// Sends the held event, if any. A held tail whose text `next` goes on with waits in
    /// its restorer for that piece; any other goes back, restored as far as it can be, at
    /// the end of its piece.
    fn release(&mut self, next: &[Delta], out: &mut Vec<u8>) {
        let Some(Held { mut frame, tails }) = self.held.take() else {
            return;
        };
        for (channel, path) in tails {
            if next.iter().any(|d| d.channel == channel) {
                continue;
            }
            if let Some(restorer) = self.channels.get_mut(&channel) {
                let tail = restorer.finish();
                frame.append(&path, &tail);
            }
        }
        frame.write(out);
    }

    /// Restores an event whose pieces are `deltas`, then sends it or holds it back.
    fn restore(&mut self, mut frame: Frame, deltas: &[Delta], out: &mut Vec<u8>) {
        // The pieces are taken out first, so the walk over the rest leaves them to their
        // channels' restorers.
        let pieces: Vec<String> = deltas
            .iter()
            .map(|d| {
                string_at(&mut frame.data, &d.path)
                    .map(std::mem::take)
                    .unwrap_or_default()
            })
            .collect();
        if memmem::find(&frame.raw, PREFIX.as_bytes()).is_some() {
            frame.walked = restore_strings(&self.values, &mut frame.data);
        }
        for (delta, piece) in deltas.iter().zip(pieces) {
            let restorer = self
                .channels
                .entry(delta.channel.clone())
                .or_insert_with(|| self.values.restorer(delta.escape));
            let restored = restorer.push(&piece);
            if let Some(text) = string_at(&mut frame.data, &delta.path) {
                *text = restored;
            }
            frame.pieces.push((delta.path.clone(), piece));
        }
        let mut tails = Vec::new();
        for (i, delta) in deltas.iter().enumerate() {
            // A channel's tail belongs after its last piece in the event.
            let later = deltas.get(i + 1..).unwrap_or_default();
            if later.iter().any(|d| d.channel == delta.channel) {
                continue;
            }
            let Some(restorer) = self.channels.get_mut(&delta.channel) else {
                continue;
            };
            if !restorer.holds() {
                continue;
            }
            if delta.ends {
                let tail = restorer.finish();
                frame.append(&delta.path, &tail);
            } else {
                tails.push((delta.channel.clone(), delta.path.clone()));
            }
        }
        if tails.is_empty() {
            frame.write(out);
        } else {
            self.held = Some(Held { frame, tails });
        }
    }
}

impl std::fmt::Debug for SseRestorer {
    // The events held are the answer's text, values restored: never shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseRestorer")
            .field("dialect", &self.dialect)
            .field("values", &self.values)
            .field("channels", &self.channels.len())
            .field("pending", &self.pending.len())
            .field("held", &self.held.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::guard::kind::SecretKind;
    use crate::guard::placeholder::Placeholders;
    use crate::guard::vault::Vault;
    use crate::sse::frame_end;
    use crate::translate::ir::StopReason;
    use crate::translate::stream::{Decoder, Encoder, Event};
    use crate::usage::Usage;

    const DIALECTS: [Dialect; 4] = [
        Dialect::OpenAiChat,
        Dialect::OpenAiResponses,
        Dialect::AnthropicMessages,
        Dialect::Gemini,
    ];

    fn vault() -> Vault {
        Vault::new(Placeholders::new([7; 32]), 64)
    }

    /// A stream as `dialect`'s provider writes it (the wire's encoder writes each
    /// provider's documented events): `events` between the start and the end.
    fn stream(dialect: Dialect, events: Vec<Event>, stop: StopReason) -> Vec<u8> {
        let mut encoder = Encoder::new(dialect, true, 1);
        let mut out = Vec::new();
        let start = Event::Start {
            id: "msg_01abc".into(),
            model: "model-1".into(),
        };
        encoder.encode(start, &mut out);
        for event in events {
            encoder.encode(event, &mut out);
        }
        encoder.encode(Event::Stop(stop), &mut out);
        let usage = Usage {
            input: 12,
            output: 7,
            ..Usage::default()
        };
        encoder.encode(Event::Usage(usage), &mut out);
        encoder.finish(&mut out);
        out
    }

    /// A streamed answer: its thinking, then its text, each in the pieces given.
    fn answer(dialect: Dialect, thinking: &[&str], text: &[&str]) -> Vec<u8> {
        let thoughts = thinking.iter().map(|t| Event::Thinking((*t).to_owned()));
        let texts = text.iter().map(|t| Event::Text((*t).to_owned()));
        stream(
            dialect,
            thoughts.chain(texts).collect(),
            StopReason::EndTurn,
        )
    }

    /// A streamed tool call whose arguments come in the pieces given.
    fn call(dialect: Dialect, arguments: &[&str]) -> Vec<u8> {
        let start = Event::ToolStart {
            index: 0,
            id: "call_1".into(),
            name: "shell".into(),
        };
        let pieces = arguments.iter().map(|a| Event::ToolArgs {
            index: 0,
            json: (*a).to_owned(),
        });
        let events = std::iter::once(start).chain(pieces).collect();
        stream(dialect, events, StopReason::ToolUse)
    }

    /// The events of an SSE body, and what is left after the last whole one.
    fn frames(body: &[u8]) -> (Vec<&[u8]>, &[u8]) {
        let mut found = Vec::new();
        let mut rest = body;
        while let Some(end) = frame_end(rest, 0) {
            found.push(&rest[..end]);
            rest = &rest[end..];
        }
        (found, rest)
    }

    /// What a client reads from a stream: each text's pieces joined.
    #[derive(Debug, Default, PartialEq)]
    struct Read {
        text: String,
        thinking: String,
        tools: BTreeMap<u64, String>,
    }

    fn read(dialect: Dialect, body: &[u8]) -> Read {
        let (events, rest) = frames(body);
        assert!(rest.is_empty(), "a stream ends with a whole event");
        let mut decoder = Decoder::new(dialect);
        let mut decoded = Vec::new();
        for event in events {
            if let Some(data) = frame_data(event) {
                decoder.decode(&data, &mut decoded);
            }
        }
        let mut read = Read::default();
        for event in decoded {
            match event {
                Event::Text(t) => read.text.push_str(&t),
                Event::Thinking(t) => read.thinking.push_str(&t),
                Event::ToolArgs { index, json } => {
                    read.tools.entry(index).or_default().push_str(&json)
                }
                _ => {}
            }
        }
        read
    }

    /// `body` through a restorer, pushed in `chunks`; each push gives whole events only.
    fn restored<'a>(
        dialect: Dialect,
        values: &Values,
        chunks: impl IntoIterator<Item = &'a [u8]>,
    ) -> Vec<u8> {
        let mut restorer = SseRestorer::new(dialect, values.clone());
        let mut out = Vec::new();
        for chunk in chunks {
            let sent = restorer.push(chunk);
            assert!(
                frames(&sent).1.is_empty(),
                "{dialect:?}: a push sends whole events"
            );
            out.extend(sent);
        }
        out.extend(restorer.finish());
        out
    }

    /// Restored with the body pushed whole, a byte at a time, and in two chunks cut at
    /// every byte (inside lines, inside `\r\n`, inside characters): the same bytes.
    fn restored_every_way(dialect: Dialect, values: &Values, body: &[u8]) -> Vec<u8> {
        let whole = restored(dialect, values, [body]);
        assert_eq!(restored(dialect, values, body.chunks(1)), whole);
        for cut in 0..=body.len() {
            let two = restored(dialect, values, [&body[..cut], &body[cut..]]);
            assert_eq!(two, whole, "{dialect:?}: chunks cut at byte {cut}");
        }
        whole
    }

    fn contains(body: &[u8], text: &str) -> bool {
        memmem::find(body, text.as_bytes()).is_some()
    }

    /// A thinking text and an answer text, each with a placeholder split between two
    /// deltas at every byte of it, in every dialect: the client reads the value in place
    /// in both, whatever chunks the body comes in, and gets as many events as were sent.
    #[test]
    fn split_placeholder_restored_in_every_dialect() {
        let mut vault = vault();
        let value = "hunter2-välue";
        let p = vault.keep("s", SecretKind::EnvSecret, value);
        let values = vault.values_of("s");
        let thinking = format!("The key is {p}, I'll use it.");
        let text = format!("Set KEY={p} — déjà vu");
        let (t_at, x_at) = (
            thinking.find(&p).unwrap_or_default(),
            text.find(&p).unwrap_or_default(),
        );
        for dialect in DIALECTS {
            for k in 0..=p.len() {
                let body = answer(
                    dialect,
                    &[&thinking[..t_at + k], &thinking[t_at + k..]],
                    &[&text[..x_at + k], &text[x_at + k..]],
                );
                let out = if k == p.len() / 2 {
                    restored_every_way(dialect, &values, &body)
                } else {
                    let whole = restored(dialect, &values, [&body[..]]);
                    assert_eq!(restored(dialect, &values, body.chunks(1)), whole);
                    whole
                };
                let read = read(dialect, &out);
                assert_eq!(read.text, text.replace(&p, value), "{dialect:?} cut {k}");
                assert_eq!(read.thinking, thinking.replace(&p, value), "{dialect:?}");
                assert!(!contains(&out, &p), "{dialect:?}: no placeholder left");
                assert_eq!(frames(&out).0.len(), frames(&body).0.len());
            }
        }
    }

    /// A tool call's arguments with a placeholder split at every byte, whose value holds
    /// `"`, `\` and a newline: the arguments stay JSON and decode to the value (Gemini
    /// sends a call whole, as an object).
    #[test]
    fn tool_arguments_stay_json_with_the_value_in_place() {
        let mut vault = vault();
        let value = "pa\"ss\\wo\nrd";
        let p = vault.keep("s", SecretKind::EnvSecret, value);
        let values = vault.values_of("s");
        let arguments = format!(r#"{{"command":"login --password {p}"}}"#);
        let at = arguments.find(&p).unwrap_or_default();
        for dialect in DIALECTS {
            for k in 0..=p.len() {
                let body = call(dialect, &[&arguments[..at + k], &arguments[at + k..]]);
                let out = if k == 5 {
                    restored_every_way(dialect, &values, &body)
                } else {
                    restored(dialect, &values, body.chunks(1))
                };
                let read = read(dialect, &out);
                let args: Value = serde_json::from_str(&read.tools[&0]).unwrap();
                assert_eq!(
                    args["command"],
                    format!("login --password {value}"),
                    "{dialect:?} cut {k}"
                );
                assert!(!contains(&out, &p), "{dialect:?}: no placeholder left");
                // Every event is still JSON; whole arguments (Responses' `.done`, the
                // item, the completed response) parse as the value too.
                for event in frames(&out).0 {
                    let Some(data) = frame_data(event) else {
                        continue;
                    };
                    if &*data == b"[DONE]" {
                        continue;
                    }
                    let json: Value = serde_json::from_slice(&data).unwrap();
                    if let Some(args) = json.get("arguments").and_then(Value::as_str) {
                        let args: Value = serde_json::from_str(args).unwrap();
                        assert_eq!(args["command"], format!("login --password {value}"));
                    }
                }
            }
        }
    }

    /// With values to restore but none of them in the answer, every event goes on byte
    /// for byte: a whole answer with thinking, text and a call, and Anthropic's spaced
    /// ping and Gemini's `\r\n` endings as they came.
    #[test]
    fn events_without_placeholders_pass_byte_identical() {
        let mut vault = vault();
        vault.keep("s", SecretKind::GithubToken, "ghp_value");
        let values = vault.values_of("s");
        for dialect in DIALECTS {
            let events = vec![
                Event::Thinking("Think: TRIMGATE is a gateway. ".into()),
                Event::Thinking("Tea?".into()),
                Event::Text("Hello — Welt ".into()),
                Event::Text("¡Todo bien!".into()),
                Event::ToolStart {
                    index: 1,
                    id: "call_9".into(),
                    name: "ls".into(),
                },
                Event::ToolArgs {
                    index: 1,
                    json: r#"{"path": "/tmp/Ti"#.into(),
                },
                Event::ToolArgs {
                    index: 1,
                    json: r#"me"}"#.into(),
                },
            ];
            let body = stream(dialect, events, StopReason::ToolUse);
            assert_eq!(
                restored_every_way(dialect, &values, &body),
                body,
                "{dialect:?}"
            );
        }
        let ping = b"event: ping\ndata: {\"type\": \"ping\"}\n\n: comment\n\n";
        let values = &values;
        assert_eq!(
            restored(Dialect::AnthropicMessages, values, [&ping[..]]),
            ping
        );
    }

    /// Another scope's placeholder, and one a user typed, stay as they are, even split
    /// across deltas at every byte.
    #[test]
    fn other_scopes_and_typed_placeholders_stay() {
        let mut vault = vault();
        let mine = vault.keep("me", SecretKind::EnvSecret, "mine");
        let theirs = vault.keep("them", SecretKind::EnvSecret, "theirs");
        let typed = "TRIMGATE_SECRET_ENV_SECRET_0123456789ab";
        let values = vault.values_of("me");
        let text = format!("{theirs} {typed} {mine}");
        for dialect in DIALECTS {
            for cut in 0..theirs.len() + typed.len() + 2 {
                let body = answer(dialect, &[], &[&text[..cut], &text[cut..]]);
                let out = restored(dialect, &values, body.chunks(1));
                let want = format!("{theirs} {typed} mine");
                assert_eq!(read(dialect, &out).text, want, "{dialect:?} cut {cut}");
            }
        }
    }

    /// A text cut off inside what could have become a placeholder (the answer ran out of
    /// tokens) ends with that tail as it was, and its event goes on byte for byte once
    /// the block ends.
    #[test]
    fn tail_that_never_completes_comes_out_unchanged() {
        let mut vault = vault();
        vault.keep("s", SecretKind::EnvSecret, "value");
        let values = vault.values_of("s");
        for dialect in DIALECTS {
            let texts = ["Your key is ", "TRIMGATE_SEC"].map(|t| Event::Text(t.into()));
            let body = stream(dialect, texts.into(), StopReason::MaxTokens);
            assert_eq!(
                restored_every_way(dialect, &values, &body),
                body,
                "{dialect:?}"
            );
            // Split across two pieces, the tail moves to the second, and stays as it was.
            let thoughts =
                ["I'll print TRIMGATE_SECRET_", "ENV"].map(|t| Event::Thinking(t.into()));
            let body = stream(dialect, thoughts.into(), StopReason::MaxTokens);
            let out = restored(dialect, &values, body.chunks(1));
            assert_eq!(read(dialect, &out), read(dialect, &body), "{dialect:?}");
            assert_eq!(
                read(dialect, &out).thinking,
                "I'll print TRIMGATE_SECRET_ENV"
            );
        }
    }

    fn frame(event: Option<&str>, data: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(event) = event {
            out.extend_from_slice(format!("event: {event}\n").as_bytes());
        }
        out.extend_from_slice(format!("data: {data}\n\n").as_bytes());
        out
    }

    /// An event is held only while its tail could become a placeholder: a ping passes it
    /// without ending the text, and the next piece of the text releases it, restored.
    #[test]
    fn held_event_waits_for_the_next_piece_only() {
        let mut vault = vault();
        let p = vault.keep("s", SecretKind::EnvSecret, "v\"1");
        let mut restorer = SseRestorer::new(Dialect::AnthropicMessages, vault.values_of("s"));
        let delta = |text: &str| {
            frame(
                Some("content_block_delta"),
                &serde_json::json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": text}}),
            )
        };
        let first = delta(&format!("key {}", &p[..20]));
        assert_eq!(restorer.push(&first), b"");
        let ping = b"event: ping\ndata: {\"type\": \"ping\"}\n\n";
        assert_eq!(restorer.push(ping), ping);
        let out = restorer.push(&delta(&format!("{} ok", &p[20..])));
        let (events, _) = frames(&out);
        assert_eq!(events, [&delta("key ")[..], &delta("v\"1 ok")[..]]);
        let stop = frame(
            Some("content_block_stop"),
            &serde_json::json!({"type": "content_block_stop", "index": 0}),
        );
        assert_eq!(restorer.push(&stop), stop);
        assert_eq!(restorer.finish(), b"");
    }

    /// An event that carries both the last piece of a text and its end (Chat's
    /// `finish_reason`, Gemini's `finishReason`) is not held: its tail stays in it.
    #[test]
    fn piece_with_its_end_is_not_held() {
        let mut vault = vault();
        vault.keep("s", SecretKind::EnvSecret, "value");
        let values = vault.values_of("s");
        let chat = frame(
            None,
            &serde_json::json!({"id": "c", "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": {"content": "see TRIMGATE_"}, "finish_reason": "length"}]}),
        );
        let mut restorer = SseRestorer::new(Dialect::OpenAiChat, values.clone());
        assert_eq!(restorer.push(&chat), chat);
        let gemini = b"data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"see TRIM\"}], \
                       \"role\": \"model\"}, \"finishReason\": \"MAX_TOKENS\", \"index\": 0}]}\r\n\r\n";
        let mut restorer = SseRestorer::new(Dialect::Gemini, values);
        assert_eq!(restorer.push(gemini), gemini);
    }

    /// A rewritten event keeps its `event:` and `id:` lines and its comments, with one
    /// `data:` line (a multi-line data joined), in the event's own line endings.
    #[test]
    fn rewritten_event_keeps_its_other_lines() {
        let mut vault = vault();
        let p = vault.keep("s", SecretKind::EnvSecret, "value");
        let values = vault.values_of("s");
        let body = format!(
            "event: response.output_text.done\r\nid: 7\r\n: note\r\ndata: {{\"type\":\"response.output_text.done\",\r\ndata: \"text\":\"{p}\"}}\r\n\r\n"
        );
        let out = restored(Dialect::OpenAiResponses, &values, [body.as_bytes()]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "event: response.output_text.done\r\nid: 7\r\n: note\r\n\
             data: {\"text\":\"value\",\"type\":\"response.output_text.done\"}\r\n\r\n"
        );
    }

    /// `[DONE]`, a frame that is not JSON, one too large to read, and bytes never ended
    /// go on as they came; what is held is released before them.
    #[test]
    fn unreadable_frames_pass_unchanged() {
        let mut vault = vault();
        let p = vault.keep("s", SecretKind::EnvSecret, "value");
        let values = vault.values_of("s");
        let junk = format!("data: {{not json {p}\n\ndata: [DONE]\n\n");
        let out = restored(Dialect::OpenAiChat, &values, [junk.as_bytes()]);
        assert_eq!(out, junk.as_bytes());

        let big = format!("data: {{\"x\":\"{p}{}\"}}\n\n", "a".repeat(MAX_FRAME));
        let out = restored(Dialect::Gemini, &values, big.as_bytes().chunks(1 << 16));
        assert_eq!(out, big.as_bytes());

        let held = frame(
            None,
            &serde_json::json!({"choices": [{"index": 0, "delta": {"content": "a TRIMGATE_"}}]}),
        );
        let cut = format!("data: {{\"choices\": [{{\"delta\": {{\"content\": \"{p}");
        let body = [&held[..], cut.as_bytes()].concat();
        let out = restored(Dialect::OpenAiChat, &values, [&body[..]]);
        assert_eq!(out, body);
    }

    /// Whole answers in each dialect's shape: texts get the value as it is, a call's
    /// arguments (JSON text) get it escaped and still parse, an arguments object
    /// (Anthropic's `input`, Gemini's `args`) gets it as it is, keys are untouched.
    #[test]
    fn whole_answers_in_every_dialect() {
        let mut vault = vault();
        let value = "pa\"ss\\wo\nrd";
        let p = vault.keep("s", SecretKind::EnvSecret, value);
        let values = vault.values_of("s");
        let arguments = format!(r#"{{"command":"login {p}","arguments":"{p}"}}"#);
        let bodies = [
            serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{
                "index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": format!("Using {p} now."),
                    "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "shell", "arguments": arguments}}]}}]}),
            serde_json::json!({"id": "resp_1", "object": "response", "output": [
                {"type": "message", "id": "msg_1", "role": "assistant", "content": [
                    {"type": "output_text", "text": format!("Using {p} now."), "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell",
                    "arguments": arguments}]}),
            serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [
                {"type": "text", "text": format!("Using {p} now.")},
                {"type": "tool_use", "id": "toolu_1", "name": "shell",
                    "input": {"command": format!("login {p}"), "arguments": p}}]}),
            serde_json::json!({"candidates": [{"index": 0, "content": {"role": "model", "parts": [
                {"text": format!("Using {p} now.")},
                {"functionCall": {"name": "shell",
                    "args": {"command": format!("login {p}"), "arguments": p, p.clone(): 1}}}]}}]}),
        ];
        let text = format!("Using {value} now.");
        let command = format!("login {value}");
        for body in bodies {
            let raw = serde_json::to_vec(&body).unwrap();
            let out: Value =
                serde_json::from_slice(&restore_whole(&values, &raw).unwrap()).unwrap();
            let call_args =
                |v: &Value| -> Value { serde_json::from_str(v.as_str().unwrap()).unwrap() };
            let (said, args) = if let Some(choice) = out.get("choices") {
                let m = &choice[0]["message"];
                (
                    m["content"].clone(),
                    call_args(&m["tool_calls"][0]["function"]["arguments"]),
                )
            } else if let Some(output) = out.get("output") {
                (
                    output[0]["content"][0]["text"].clone(),
                    call_args(&output[1]["arguments"]),
                )
            } else if let Some(content) = out.get("content") {
                (content[0]["text"].clone(), content[1]["input"].clone())
            } else {
                let parts = &out["candidates"][0]["content"]["parts"];
                let args = parts[1]["functionCall"]["args"].clone();
                assert_eq!(args[&p], 1, "keys are not touched");
                (parts[0]["text"].clone(), args)
            };
            assert_eq!(said, text.as_str());
            assert_eq!(args["command"], command.as_str());
            assert_eq!(args["arguments"], value);
        }
    }

    /// A whole body goes on as it is (`None`) when there is nothing to restore in it:
    /// no placeholder, only another scope's, no values, or not JSON.
    #[test]
    fn whole_answer_unchanged_is_none() {
        let mut vault = vault();
        let mine = vault.keep("me", SecretKind::EnvSecret, "mine");
        let theirs = vault.keep("them", SecretKind::EnvSecret, "theirs");
        let values = vault.values_of("me");
        let plain = br#"{"content":[{"type":"text","text":"hello"}]}"#;
        assert_eq!(restore_whole(&values, plain), None);
        let other = format!(r#"{{"content":[{{"type":"text","text":"{theirs}"}}]}}"#);
        assert_eq!(restore_whole(&values, other.as_bytes()), None);
        let mine_body = format!(r#"{{"text":"{mine}"}}"#);
        assert_eq!(
            restore_whole(&Values::default(), mine_body.as_bytes()),
            None
        );
        let not_json = format!("upstream error: {mine}");
        assert_eq!(restore_whole(&values, not_json.as_bytes()), None);
        assert_eq!(
            restore_whole(&values, mine_body.as_bytes()).as_deref(),
            Some(&br#"{"text":"mine"}"#[..])
        );
    }
}
