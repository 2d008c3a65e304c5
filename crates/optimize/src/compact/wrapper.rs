//! Agents' wrappers around a command's output. A coding agent does not always send what a
//! command printed bare: it puts its own lines around it, or the whole output inside a
//! JSON string. The wrapper is the agent's, not the command's: it is found here, kept byte
//! for byte, and only the output inside it is classified and compacted.
//!
//! The shapes, as the real CLIs send them (`bench/corpus/outputs/codex-*`, `claude-*`):
//!
//! - **Codex header** (Codex CLI `exec_command`, and its freeform `shell`): header lines,
//!   each at most once and in the order Codex chose (`Command: …`, `Chunk ID: 6bfca9`,
//!   `Wall time: 0.0022 seconds`, `Process exited with code 0`, `Process running with
//!   session ID 3`, `Original token count: 161`, `Exit code: 0`, `Total output lines: 9`),
//!   `Wall time` always among them, then `Output:` on its own line and the output.
//! - **Codex JSON** (Codex CLI `shell` up to 0.4x, and agents modelled on it): one JSON
//!   object, `{"output":"…","metadata":{"exit_code":0,"duration_seconds":0.2}}`. The
//!   output is a JSON string: decoded to be compacted, encoded again in its place.
//! - **Claude Code** (`Bash`): `Exit code N` on the first line when the command failed,
//!   and `<system-reminder>…</system-reminder>` blocks after the output.
//! - **Gemini CLI** (`run_shell_command`): `<untrusted_context>` and `Output: ` before the
//!   output; after it, on lines of their own and in this order when present, `Error: …`,
//!   `Exit Code: N`, `Signal: …`, `Background PIDs: …`, `Process Group PGID: N`; then
//!   `</untrusted_context>`.
//!
//! In either Codex shape, the notice Codex puts at the head of an output it cut itself
//! (`Warning: truncated output (original token count: N)`, `Total output lines: N`, a
//! blank line) is the agent's too, and stays with the wrapper.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Whose wrapper a tool result is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    CodexHeader,
    CodexJson,
    ClaudeCode,
    GeminiCli,
}

/// A tool result split into the agent's wrapper and the command's output inside it.
#[derive(Debug)]
pub(crate) struct Wrapped<'a> {
    pub shape: Shape,
    /// Everything before the output, byte for byte (for the JSON shape, up to the
    /// string's opening quote).
    prefix: &'a str,
    /// What the wrapper holds (decoded, when it is a JSON string): the agent's notice,
    /// if any, then the command's output.
    inner: Cow<'a, str>,
    /// Length of the agent's notice at the head of `inner`.
    notice: usize,
    /// Everything after the output, byte for byte.
    suffix: &'a str,
}

/// Lines Codex writes above an output, by how they start.
const CODEX_HEADER: [&str; 8] = [
    "Command: ",
    "Chunk ID: ",
    "Wall time: ",
    "Process exited with code ",
    "Process running with session ID ",
    "Original token count: ",
    "Exit code: ",
    "Total output lines: ",
];
/// The header line every Codex shape has.
const CODEX_WALL_TIME: usize = 2;
/// The line that ends a Codex header.
const CODEX_OUTPUT_LINE: &str = "Output:";

/// The lines Codex puts at the head of an output it cut to fit its own budget.
const CODEX_TRUNCATED: &str = "Warning: truncated output (original token count: ";
const CODEX_TOTAL_LINES: &str = "Total output lines: ";

/// Claude Code's line above a failed command's output.
const CLAUDE_EXIT_CODE: &str = "Exit code ";
const REMINDER_OPEN: &str = "<system-reminder>";
const REMINDER_CLOSE: &str = "</system-reminder>";

/// Gemini CLI's envelope around what an outside tool returned, and its shell's lines.
const GEMINI_OPEN: &str = "<untrusted_context>\n";
const GEMINI_CLOSE: &str = "\n</untrusted_context>";
const GEMINI_OUTPUT: &str = "Output: ";
const GEMINI_TRAILERS: [&str; 5] = [
    "Error: ",
    "Exit Code: ",
    "Signal: ",
    "Background PIDs: ",
    "Process Group PGID: ",
];

/// The agent's wrapper around `text` and the output inside it, or `None` when `text` is
/// not in a wrapper this module knows (it is then compacted as it is).
pub(crate) fn split(text: &str) -> Option<Wrapped<'_>> {
    codex_json(text)
        .or_else(|| codex_header(text))
        .or_else(|| gemini_cli(text))
        .or_else(|| claude_code(text))
}

impl<'a> Wrapped<'a> {
    /// The output as the command printed it.
    pub fn output(&self) -> &str {
        self.inner.get(self.notice..).unwrap_or_default()
    }

    /// The output as the command printed it, borrowed from the tool result unless the
    /// wrapper had to decode it.
    pub fn into_output(self) -> Cow<'a, str> {
        match self.inner {
            Cow::Borrowed(inner) => Cow::Borrowed(inner.get(self.notice..).unwrap_or_default()),
            Cow::Owned(inner) => {
                Cow::Owned(inner.get(self.notice..).unwrap_or_default().to_owned())
            }
        }
    }

    /// The same wrapper around `output` (a compacted form of [`Wrapped::output`]): every
    /// byte of the wrapper as it was, the output in it encoded as the wrapper holds it.
    pub fn rewrap(&self, output: &str) -> Option<String> {
        let notice = self.inner.get(..self.notice).unwrap_or_default();
        let mut out = String::with_capacity(self.prefix.len() + output.len() + self.suffix.len());
        out.push_str(self.prefix);
        match self.shape {
            Shape::CodexJson => {
                out.push_str(&serde_json::to_string(&format!("{notice}{output}")).ok()?);
            }
            Shape::CodexHeader | Shape::ClaudeCode | Shape::GeminiCli => {
                out.push_str(notice);
                out.push_str(output);
            }
        }
        out.push_str(self.suffix);
        Some(out)
    }
}

/// The first line of `text` and the offset just past its `\n`, if it has one.
fn first_line(text: &str) -> Option<(&str, usize)> {
    let end = memchr::memchr(b'\n', text.as_bytes())?;
    Some((text.get(..end)?, end + 1))
}

/// The length of Codex's truncation notice at the start of `output` (0 when none).
fn codex_notice(output: &str) -> usize {
    let mut at = 0;
    if let Some((line, next)) = first_line(output) {
        if line.starts_with(CODEX_TRUNCATED) && line.ends_with(')') {
            at = next;
        }
    }
    let rest = output.get(at..).unwrap_or_default();
    match first_line(rest) {
        Some((line, next))
            if is_total_lines(line) && rest.get(next..).is_some_and(|r| r.starts_with('\n')) =>
        {
            at + next + 1
        }
        _ => 0,
    }
}

fn is_total_lines(line: &str) -> bool {
    line.strip_prefix(CODEX_TOTAL_LINES)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn codex_header(text: &str) -> Option<Wrapped<'_>> {
    let mut seen = [false; CODEX_HEADER.len()];
    let mut at = 0;
    loop {
        let (line, next) = first_line(text.get(at..)?)?;
        if line == CODEX_OUTPUT_LINE {
            if !seen[CODEX_WALL_TIME] {
                return None;
            }
            let (prefix, rest) = text.split_at(at + next);
            return Some(Wrapped {
                shape: Shape::CodexHeader,
                prefix,
                inner: Cow::Borrowed(rest),
                notice: codex_notice(rest),
                suffix: "",
            });
        }
        let kind = CODEX_HEADER.iter().position(|p| line.starts_with(p))?;
        if std::mem::replace(&mut seen[kind], true) {
            return None;
        }
        at += next;
    }
}

/// `{"output": "…", "metadata": {"exit_code": …}}`, other members allowed.
#[derive(Deserialize)]
struct ExecJson<'a> {
    #[serde(borrow)]
    output: &'a RawValue,
    metadata: ExecMetadata,
}

#[derive(Deserialize)]
struct ExecMetadata {
    exit_code: IgnoredAny,
}

fn codex_json(text: &str) -> Option<Wrapped<'_>> {
    let has = |key: &[u8]| memchr::memmem::find(text.as_bytes(), key).is_some();
    if !text.trim_start().starts_with('{') || !has(b"\"exit_code\"") || !has(b"\"output\"") {
        return None;
    }
    // `metadata.exit_code` must be there; its value is the wrapper's, never read.
    let ExecJson {
        output,
        metadata: ExecMetadata {
            exit_code: IgnoredAny,
        },
    } = serde_json::from_str(text).ok()?;
    let raw = output.get();
    if !raw.starts_with('"') {
        return None;
    }
    let start = (raw.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let inner: Cow<'_, str> = serde_json::from_str(raw).ok()?;
    Some(Wrapped {
        shape: Shape::CodexJson,
        prefix: text.get(..start)?,
        notice: codex_notice(&inner),
        inner,
        suffix: text.get(start + raw.len()..)?,
    })
}

fn gemini_cli(text: &str) -> Option<Wrapped<'_>> {
    let open = if text.starts_with(GEMINI_OPEN) {
        GEMINI_OPEN.len()
    } else {
        0
    };
    if !text.get(open..)?.starts_with(GEMINI_OUTPUT) {
        return None;
    }
    let start = open + GEMINI_OUTPUT.len();
    let mut end = if open > 0 {
        text.strip_suffix(GEMINI_CLOSE)?.len()
    } else {
        text.len()
    };
    // The lines after the output, read from the last up, each kind before the ones after it.
    let mut kinds = GEMINI_TRAILERS.len();
    let mut trailers = 0;
    while let Some(newline) = text.get(start..end)?.rfind('\n') {
        let line = text.get(start + newline + 1..end)?;
        let Some(kind) = GEMINI_TRAILERS[..kinds]
            .iter()
            .rposition(|p| line.starts_with(p))
        else {
            break;
        };
        kinds = kind;
        trailers += 1;
        end = start + newline;
    }
    // Bare, `Output: ` starts too many things to be taken for the wrapper on its own.
    if open == 0 && trailers == 0 {
        return None;
    }
    Some(Wrapped {
        shape: Shape::GeminiCli,
        prefix: text.get(..start)?,
        inner: Cow::Borrowed(text.get(start..end)?),
        notice: 0,
        suffix: text.get(end..)?,
    })
}

fn claude_code(text: &str) -> Option<Wrapped<'_>> {
    let prefix_len = first_line(text)
        .filter(|(line, _)| {
            line.strip_prefix(CLAUDE_EXIT_CODE).is_some_and(|n| {
                let n = n.strip_prefix('-').unwrap_or(n);
                !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
            })
        })
        .map_or(0, |(_, next)| next);
    let body = text.get(prefix_len..)?;
    let suffix_at = reminders_start(body);
    if prefix_len == 0 && suffix_at == body.len() {
        return None;
    }
    let (output, suffix) = body.split_at(suffix_at);
    Some(Wrapped {
        shape: Shape::ClaudeCode,
        prefix: text.get(..prefix_len)?,
        inner: Cow::Borrowed(output),
        notice: 0,
        suffix,
    })
}

/// Where the `<system-reminder>` blocks at the end of `text` start, with the newlines
/// before them; `text.len()` when it does not end with one.
fn reminders_start(text: &str) -> usize {
    let mut cut = text.len();
    loop {
        let head = text.get(..cut).unwrap_or_default().trim_end_matches('\n');
        let Some(before) = head.strip_suffix(REMINDER_CLOSE) else {
            return cut;
        };
        let Some(open) = before.rfind(REMINDER_OPEN) else {
            return cut;
        };
        let above = text.get(..open).unwrap_or_default();
        if !(above.is_empty() || above.ends_with('\n')) {
            return cut;
        }
        cut = above.trim_end_matches('\n').len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_clis_envelope_and_trailing_lines_are_the_wrapper() {
        let text = "<untrusted_context>\nOutput: line one\nline two\nExit Code: 1\nProcess Group PGID: 42\n</untrusted_context>";
        let w = split(text).unwrap();
        assert_eq!(w.shape, Shape::GeminiCli);
        assert_eq!(w.output(), "line one\nline two");
        assert_eq!(w.rewrap(w.output()).unwrap(), text);
        assert_eq!(
            w.rewrap("short").unwrap(),
            "<untrusted_context>\nOutput: short\nExit Code: 1\nProcess Group PGID: 42\n</untrusted_context>"
        );
        // An output line that only looks like a trailer, above the output's end, stays in it.
        let text = "<untrusted_context>\nOutput: Signal: not mine\nok\nProcess Group PGID: 7\n</untrusted_context>";
        assert_eq!(split(text).unwrap().output(), "Signal: not mine\nok");
        // Bare `Output: ` text with nothing of the CLI's around it is no wrapper.
        assert!(gemini_cli("Output: something a program printed").is_none());
    }

    const GIT_LOG: &str = include_str!("../../../../bench/corpus/outputs/git-log-format.txt");
    const NPM_LS: &str = include_str!("../../../../bench/corpus/outputs/npm-ls-all.txt");
    /// The tool results the real CLIs sent for those two commands (see the MANIFEST).
    const CODEX_EXEC_GIT_LOG: &str =
        include_str!("../../../../bench/corpus/outputs/codex-exec-git-log-format.txt");
    const CODEX_EXEC_NPM_LS: &str =
        include_str!("../../../../bench/corpus/outputs/codex-exec-npm-ls-all.txt");
    const CODEX_SHELL_GIT_LOG: &str =
        include_str!("../../../../bench/corpus/outputs/codex-shell-git-log-format.txt");
    const CODEX_SHELL_NPM_LS: &str =
        include_str!("../../../../bench/corpus/outputs/codex-shell-npm-ls-all.txt");
    const CLAUDE_GIT_LOG: &str =
        include_str!("../../../../bench/corpus/outputs/claude-bash-git-log-format.txt");
    const CLAUDE_TSC: &str =
        include_str!("../../../../bench/corpus/outputs/claude-bash-tsc-errors.txt");

    fn split_ok(text: &str) -> Wrapped<'_> {
        split(text).unwrap_or_else(|| panic!("not recognised as wrapped: {:?}", text.get(..80)))
    }

    /// Codex 0.171's `exec_command` result: the header up to `Output:` is the wrapper, the
    /// rest is the command's output exactly as the command printed it.
    #[test]
    fn codex_exec_header_is_set_aside_and_put_back_byte_for_byte() {
        for (text, bare) in [(CODEX_EXEC_GIT_LOG, GIT_LOG), (CODEX_EXEC_NPM_LS, NPM_LS)] {
            let wrapped = split_ok(text);
            assert_eq!(wrapped.shape, Shape::CodexHeader);
            assert!(
                wrapped.prefix.starts_with("Chunk ID: "),
                "{}",
                wrapped.prefix
            );
            assert!(wrapped.prefix.contains("\nWall time: "));
            assert!(wrapped.prefix.contains("\nProcess exited with code 0\n"));
            assert!(wrapped.prefix.ends_with("\nOutput:\n"));
            assert_eq!(wrapped.output(), bare);
            assert_eq!(wrapped.rewrap(bare).as_deref(), Some(text));
        }
    }

    /// Codex writes a subset of its header lines, in its own order: the freeform shell's
    /// `Exit code:` first, a running process's session id, a `Command:` line. `Wall time`
    /// is always there; an unknown or repeated line means it is not Codex's header.
    #[test]
    fn codex_header_lines_come_in_any_order_and_subset() {
        let headers = [
            "Exit code: 0\nWall time: 0.2 seconds\nTotal output lines: 3\nOutput:\n",
            "Command: git status\nChunk ID: 1c74f3\nWall time: 1.0021 seconds\nProcess running with session ID 7\nOriginal token count: 3\nOutput:\n",
            "Wall time: 0.0000 seconds\nOutput:\n",
        ];
        for header in headers {
            let text = format!("{header}a\nb\nc\n");
            let wrapped = split_ok(&text);
            assert_eq!(
                (wrapped.shape, wrapped.prefix),
                (Shape::CodexHeader, header)
            );
            assert_eq!(wrapped.output(), "a\nb\nc\n");
        }
        for not_codex in [
            "Chunk ID: 1c74f3\nOutput:\nno wall time\n",
            "Wall time: 1 seconds\nWall time: 2 seconds\nOutput:\nrepeated\n",
            "Wall time: 1 seconds\nBuild started\nOutput:\nan unknown line\n",
            "Output:\njust a word\n",
        ] {
            assert!(split(not_codex).is_none(), "{not_codex}");
        }
    }

    /// The notice Codex puts above an output it cut itself is Codex's, not the command's.
    #[test]
    fn codex_truncation_notice_stays_with_the_wrapper() {
        let text = "Chunk ID: 4c8206\nWall time: 0.1 seconds\nProcess exited with code 0\nOriginal token count: 12000\nOutput:\nWarning: truncated output (original token count: 12000)\nTotal output lines: 900\n\nfirst\n…11000 tokens truncated…\nlast\n";
        let wrapped = split_ok(text);
        assert_eq!(wrapped.output(), "first\n…11000 tokens truncated…\nlast\n");
        assert_eq!(
            wrapped.rewrap("first").as_deref(),
            Some(
                text.replace("first\n…11000 tokens truncated…\nlast\n", "first")
                    .as_str()
            )
        );
    }

    /// Codex 0.45's `shell` result is a JSON object: the output is its `output` string,
    /// decoded; put back, it is encoded again in the same place and every other byte stays.
    #[test]
    fn codex_json_output_is_decoded_and_encoded_in_place() {
        for text in [CODEX_SHELL_GIT_LOG, CODEX_SHELL_NPM_LS] {
            let wrapped = split_ok(text);
            assert_eq!(wrapped.shape, Shape::CodexJson);
            assert_eq!(wrapped.prefix, "{\"output\":");
            assert!(wrapped
                .suffix
                .starts_with(",\"metadata\":{\"exit_code\":0,"));
            // This release cut both outputs itself, under its own notice.
            assert!(wrapped.inner.starts_with("Total output lines: "));
            assert!(wrapped.output().contains("[... omitted "));
            assert_eq!(wrapped.rewrap(wrapped.output()).as_deref(), Some(text));
            let shorter = wrapped.rewrap("one \"quoted\"\nline").unwrap_or_default();
            let value: serde_json::Value = serde_json::from_str(&shorter).unwrap();
            let notice = wrapped.inner.get(..wrapped.notice).unwrap_or_default();
            assert_eq!(value["output"], format!("{notice}one \"quoted\"\nline"));
            assert!(shorter.ends_with(wrapped.suffix));
        }
        let own = format!(
            "{{\"output\": {}, \"metadata\": {{\"exit_code\": 1, \"duration_seconds\": 0.5}}}}",
            serde_json::to_string(NPM_LS).unwrap()
        );
        let wrapped = split_ok(&own);
        assert_eq!(wrapped.output(), NPM_LS);
        assert_eq!(wrapped.rewrap(NPM_LS).as_deref(), Some(own.as_str()));
    }

    /// Claude Code's `Bash` result: `Exit code N` above a failure's output and the
    /// reminder blocks below it are Claude Code's; the output between is the command's.
    #[test]
    fn claude_code_exit_code_and_reminders_are_the_wrapper() {
        let wrapped = split_ok(CLAUDE_GIT_LOG);
        assert_eq!(wrapped.shape, Shape::ClaudeCode);
        assert_eq!(wrapped.prefix, "");
        assert_eq!(wrapped.output(), GIT_LOG.trim_end_matches('\n'));
        assert!(wrapped.suffix.starts_with("\n\n<system-reminder>\n"));
        assert!(wrapped.suffix.ends_with("</system-reminder>"));
        assert_eq!(
            wrapped.rewrap(wrapped.output()).as_deref(),
            Some(CLAUDE_GIT_LOG)
        );

        let wrapped = split_ok(CLAUDE_TSC);
        assert_eq!(wrapped.prefix, "Exit code 2\n");
        assert!(wrapped
            .output()
            .starts_with("src/server.ts(8,62): error TS2322"));
        assert!(wrapped.output().ends_with("npm notice"));
        assert_eq!(
            wrapped.rewrap(wrapped.output()).as_deref(),
            Some(CLAUDE_TSC)
        );

        let two = "out\n\n<system-reminder>\na\n</system-reminder>\n<system-reminder>\nb\n</system-reminder>\n";
        let wrapped = split_ok(two);
        assert_eq!((wrapped.output(), wrapped.suffix), ("out", &two[3..]));
    }

    /// Outputs as commands print them are not mistaken for a wrapper.
    #[test]
    fn bare_outputs_are_not_wrapped() {
        for text in [
            GIT_LOG,
            NPM_LS,
            "{\"output\": \"x\", \"metadata\": {\"duration_seconds\": 1}}",
            "{\"output\": 3, \"metadata\": {\"exit_code\": 0}}",
            "[{\"output\": \"x\", \"metadata\": {\"exit_code\": 0}}]",
            "Exit code is 2\nnot Claude's line\n",
            "inline <system-reminder>x</system-reminder>",
        ] {
            assert!(split(text).is_none(), "{text}");
        }
    }
}
