//! The savings evaluator: runs every optimizer mode over the corpus of agent requests
//! (`bench/corpus/requests`, built by `bench/corpus/build.py`) and reports, per size band
//! and mode: tokens before and after (o200k_base), needle recall in what the provider got
//! and needle recall with the originals the markers name fetched back, validity,
//! determinism across fresh processes, prefix stability across a session's turns, a
//! session cost with provider-style prompt caching, and the pipeline's own time; and how
//! many of the tokens were tool results of a kind the default may not touch (source,
//! prose, diffs, opaque blocks), with the share saved of the rest. Sessions
//! the corpus holds out of tuning are also reported as bands of their own.
//!
//! `cargo run --release -p trimgate-optimize --example savings -- bench/corpus/requests [out.json]`
//! (or `bench/savings.sh`, which builds the corpus first).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};
use trimgate_optimize::compact::{expand_listings, untouchable, Level};
use trimgate_optimize::modes::{PruneMode, TerseMode};
use trimgate_optimize::repeats::expand_references;
use trimgate_optimize::{locate, splice, tokens, Modes, Optimizer, Plan};
use trimgate_wire::dialect::Dialect;
use trimgate_wire::translate::{self, ir::Part};

/// Input price per token; only ratios are reported, so the figure only names the unit.
const INPUT_PER_MTOK: f64 = 3.0;
const CACHE_READ: f64 = 0.10;
const CACHE_WRITE: f64 = 1.25;

struct Request {
    id: String,
    session: String,
    turn: u64,
    band: String,
    dialect: Dialect,
    model: String,
    body: Vec<u8>,
    needles: Vec<String>,
    call_ids: Vec<String>,
    held_out: bool,
}

fn modes() -> Vec<(&'static str, Plan)> {
    let tool = |l| Plan {
        tool_output: Some(l),
        ..Plan::OFF
    };
    vec![
        ("off", Plan::OFF),
        ("default", Plan::DEFAULT),
        ("tool_output=light", tool(Level::Light)),
        ("tool_output=standard", tool(Level::Standard)),
        ("tool_output=aggressive", tool(Level::Aggressive)),
        ("tool_output=auto", tool(Level::Auto)),
        (
            "terse=lite",
            Plan {
                terse: Some(TerseMode::Lite),
                ..Plan::OFF
            },
        ),
        (
            "terse=full",
            Plan {
                terse: Some(TerseMode::Full),
                ..Plan::OFF
            },
        ),
        (
            "prune=balanced",
            Plan {
                prune: Some(PruneMode::Balanced),
                ..Plan::OFF
            },
        ),
        (
            "prune=aggressive",
            Plan {
                prune: Some(PruneMode::Aggressive),
                ..Plan::OFF
            },
        ),
        (
            "squeeze=on",
            Plan {
                squeeze: true,
                ..Plan::OFF
            },
        ),
    ]
}

fn dialect_of(name: &str) -> Dialect {
    match name {
        "chat" => Dialect::OpenAiChat,
        "responses" => Dialect::OpenAiResponses,
        "messages" => Dialect::AnthropicMessages,
        other => panic!("unknown dialect {other}"),
    }
}

fn load(dir: &Path) -> Vec<Request> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| {
            panic!(
                "cannot read {}: {e} (run bench/corpus/build.py)",
                dir.display()
            )
        })
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out: Vec<Request> = files
        .iter()
        .map(|path| {
            let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            let strings = |k: &str| -> Vec<String> {
                v[k].as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            Request {
                id: v["id"].as_str().unwrap().to_owned(),
                session: v["session"].as_str().unwrap().to_owned(),
                turn: v["turn"].as_u64().unwrap(),
                band: v["band"].as_str().unwrap().to_owned(),
                dialect: dialect_of(v["dialect"].as_str().unwrap()),
                model: v["model"].as_str().unwrap().to_owned(),
                body: serde_json::to_vec(&v["body"]).unwrap(),
                needles: strings("needles"),
                call_ids: strings("tool_call_ids"),
                held_out: v["held_out"].as_bool().unwrap_or(false),
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.session, a.turn).cmp(&(&b.session, b.turn)));
    out
}

/// Every string value in a JSON document (keys excluded), in document order.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

fn text_tokens(v: &Value) -> u64 {
    let mut all = Vec::new();
    strings(v, &mut all);
    all.iter().map(|s| tokens::count(s)).sum()
}

/// The request as segments in the order a provider caches them: the fixed head (system,
/// instructions, tools) then one segment per message or input item.
fn segments(dialect: Dialect, v: &Value) -> Vec<Value> {
    let (head, list) = match dialect {
        Dialect::OpenAiChat => (json!({"tools": v["tools"]}), &v["messages"]),
        Dialect::OpenAiResponses => (
            json!({"instructions": v["instructions"], "tools": v["tools"]}),
            &v["input"],
        ),
        Dialect::AnthropicMessages => (
            json!({"system": v["system"], "tools": v["tools"]}),
            &v["messages"],
        ),
        Dialect::Gemini => (
            json!({"systemInstruction": v["systemInstruction"], "tools": v["tools"]}),
            &v["contents"],
        ),
    };
    let mut out = vec![head];
    if let Some(items) = list.as_array() {
        out.extend(items.iter().cloned());
    }
    out
}

/// Tool calls and results with their ids, as the dialect's own decoder reads them.
fn pairing_ok(dialect: Dialect, body: &[u8], ids: &[String]) -> bool {
    let mut report = translate::Report::new(dialect);
    let Ok(ir) =
        translate::decode_request(dialect, body, translate::Policy::default(), &mut report)
    else {
        return false;
    };
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for m in &ir.messages {
        for p in &m.parts {
            match p {
                Part::ToolCall { id, .. } => calls.push(id.clone()),
                Part::ToolResult { call_id, .. } => results.push(call_id.clone()),
                _ => {}
            }
        }
    }
    ids.iter()
        .all(|id| calls.contains(id) && results.contains(id))
}

#[derive(Default)]
struct Row {
    requests: usize,
    tokens_before: u64,
    tokens_after: u64,
    needles: usize,
    needles_found: usize,
    /// Needles in what the provider got or in an original one of its markers names.
    needles_retrievable: usize,
    valid: usize,
    lost: Vec<String>,
    latencies: Vec<f64>,
    sessions: usize,
    sessions_stable: usize,
    cost_passthrough: f64,
    cost_mode: f64,
    /// Tokens of tool results the default level passes as sent by rule (source, prose,
    /// diffs, opaque blocks): what no mode that keeps every fact could save.
    untouchable: u64,
    /// (request id, tokens before, tokens after, tokens of tool results the default may
    /// not touch)
    per_request: Vec<(String, u64, u64, u64)>,
}

impl Row {
    fn add(&mut self, other: &Row) {
        self.requests += other.requests;
        self.tokens_before += other.tokens_before;
        self.tokens_after += other.tokens_after;
        self.untouchable += other.untouchable;
        self.needles += other.needles;
        self.needles_found += other.needles_found;
        self.needles_retrievable += other.needles_retrievable;
        self.valid += other.valid;
        self.lost.extend(other.lost.iter().cloned());
        self.latencies.extend(&other.latencies);
        self.sessions += other.sessions;
        self.sessions_stable += other.sessions_stable;
        self.cost_passthrough += other.cost_passthrough;
        self.cost_mode += other.cost_mode;
        self.per_request.extend(other.per_request.iter().cloned());
    }
}

/// The originals the markers in `text` name, as `GET /originals/<id>` gives them back.
fn fetch_originals(opt: &Optimizer, text: &str) -> String {
    let mut whole = String::new();
    for (at, _) in text.match_indices("/originals/") {
        let id = text[at + "/originals/".len()..]
            .get(..trimgate_optimize::originals::ID_LEN)
            .unwrap_or("");
        if let Some(kept) = opt.shared.originals.get(id) {
            whole.push_str(&kept.original);
            whole.push('\n');
        }
    }
    whole
}

fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// The cost of a session's input with prompt caching: each turn reads the longest prefix
/// of segments identical to the previous turn's from the cache and writes the rest.
fn session_cost(turns: &[Vec<(Value, u64)>]) -> f64 {
    let mut cost = 0.0;
    let mut previous: Option<&Vec<(Value, u64)>> = None;
    for segs in turns {
        let shared = previous.map_or(0, |prev| {
            segs.iter()
                .zip(prev.iter())
                .take_while(|(a, b)| a.0 == b.0)
                .count()
        });
        let read: u64 = segs[..shared].iter().map(|s| s.1).sum();
        let write: u64 = segs[shared..].iter().map(|s| s.1).sum();
        cost += (read as f64 * CACHE_READ + write as f64 * CACHE_WRITE) * INPUT_PER_MTOK / 1e6;
        previous = Some(segs);
    }
    cost
}

fn optimized(opt: &Optimizer, r: &Request, plan: &Plan) -> (Vec<u8>, f64) {
    let t = Instant::now();
    let out = opt.run(r.dialect, &r.body, &r.model, plan);
    let spliced = (!out.is_unchanged()).then(|| splice(&r.body, &out.edits));
    let ms = t.elapsed().as_secs_f64() * 1e3;
    (spliced.unwrap_or_else(|| r.body.clone()), ms)
}

/// `--hashes`: prints one SHA-256 per (mode, request), for the determinism check.
fn hashes(requests: &[Request]) -> Vec<String> {
    let mut out = Vec::new();
    for (name, plan) in modes() {
        let opt = Optimizer::new(Modes::default());
        for r in requests {
            let (body, _) = optimized(&opt, r, &plan);
            out.push(format!("{name} {} {}", r.id, hex(&body)));
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Tokens of the request's tool results that are of a kind the default may not touch.
fn untouchable_tokens(r: &Request) -> u64 {
    locate::locate(r.dialect, &r.body).map_or(0, |located| {
        located
            .tool_blocks
            .iter()
            .filter(|b| untouchable(&b.text))
            .map(|b| tokens::count(&b.text))
            .sum()
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).map_or("bench/corpus/requests", String::as_str);
    let requests = load(Path::new(dir));
    if args.get(2).map(String::as_str) == Some("--hashes") {
        for line in hashes(&requests) {
            println!("{line}");
        }
        return;
    }
    let out_path = args.get(2).cloned();
    eprintln!("{} requests from {dir}", requests.len());

    // Determinism: two fresh processes must produce the same bytes as this one.
    let here = hashes(&requests);
    let exe = std::env::current_exe().unwrap();
    let mut deterministic_runs = 0;
    for _ in 0..2 {
        let child = std::process::Command::new(&exe)
            .args([dir, "--hashes"])
            .output()
            .unwrap();
        let theirs: Vec<String> = String::from_utf8(child.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        if theirs == here {
            deterministic_runs += 1;
        }
    }
    let deterministic_share = deterministic_runs as f64 / 2.0;

    // Original segment token counts, per request, for the cost model's baseline.
    let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
    let mut by_session: BTreeMap<&str, Vec<&Request>> = BTreeMap::new();
    for r in &requests {
        by_session.entry(&r.session).or_default().push(r);
    }
    let band_of = |s: &str| by_session[s][0].band.clone();
    let seg_tokens = |dialect: Dialect, body: &[u8]| -> Vec<(Value, u64)> {
        let v: Value = serde_json::from_slice(body).unwrap();
        segments(dialect, &v)
            .into_iter()
            .map(|s| {
                let t = text_tokens(&s);
                (s, t)
            })
            .collect()
    };
    let baseline: BTreeMap<&str, f64> = by_session
        .iter()
        .map(|(s, turns)| {
            let segs: Vec<_> = turns
                .iter()
                .map(|r| seg_tokens(r.dialect, &r.body))
                .collect();
            (*s, session_cost(&segs))
        })
        .collect();

    let untouched: BTreeMap<&str, u64> = requests
        .iter()
        .map(|r| (r.id.as_str(), untouchable_tokens(r)))
        .collect();

    for (name, plan) in modes() {
        // Room for every original in memory: in a gateway the ledger keeps them all for
        // `originals_days`, so what a marker names can always be fetched back.
        let opt = Optimizer::new(Modes {
            originals_bytes: usize::MAX,
            ..Modes::default()
        });
        for (session, turns) in &by_session {
            let band = band_of(session);
            let held_out = turns[0].held_out;
            let mut session_row = Row::default();
            let row = &mut session_row;
            let mut optimized_segs = Vec::new();
            let mut previous: Option<Vec<Value>> = None;
            let mut stable = true;
            for r in turns {
                let (body, ms) = optimized(&opt, r, &plan);
                row.requests += 1;
                row.untouchable += untouched[r.id.as_str()];
                row.latencies.push(ms);
                let before: Value = serde_json::from_slice(&r.body).unwrap();
                row.tokens_before += text_tokens(&before);
                let parsed: Result<Value, _> = serde_json::from_slice(&body);
                let Ok(after) = parsed else {
                    row.lost.push(format!("{}: invalid JSON", r.id));
                    continue;
                };
                let after_tokens = text_tokens(&after);
                row.tokens_after += after_tokens;
                row.per_request.push((
                    r.id.clone(),
                    text_tokens(&before),
                    after_tokens,
                    untouched[r.id.as_str()],
                ));
                if pairing_ok(r.dialect, &body, &r.call_ids) {
                    row.valid += 1;
                } else {
                    row.lost
                        .push(format!("{}: structure or pairing broken", r.id));
                }
                let mut all = Vec::new();
                strings(&after, &mut all);
                // Facts are looked for as written, in grouped listings expanded back (package
                // listings said as an earlier one too), and with whitespace ignored (a minified JSON document keeps every value).
                let text = all.join("\n");
                // each string on its own: an output inside an agent's wrapper is expanded
                // as it would be bare
                let expanded: Vec<String> = all.iter().map(|s| expand_listings(s)).collect();
                // and a package listing said as an earlier one, printed again from it
                let references = expand_references(r.dialect, &body).join("\n");
                let view = format!("{text}\n{}\n{references}", expanded.join("\n"));
                let squashed = squash(&view);
                let mut fetched: Option<(String, String)> = None;
                for n in &r.needles {
                    row.needles += 1;
                    if view.contains(n.as_str()) || squashed.contains(&squash(n)) {
                        row.needles_found += 1;
                        row.needles_retrievable += 1;
                        continue;
                    }
                    // What an agent gets back by following the markers' ids.
                    let (whole, whole_squashed) = fetched.get_or_insert_with(|| {
                        let whole = fetch_originals(&opt, &text);
                        let squashed = squash(&whole);
                        (whole, squashed)
                    });
                    if whole.contains(n.as_str()) || whole_squashed.contains(&squash(n)) {
                        row.needles_retrievable += 1;
                        row.lost
                            .push(format!("{}: needle {n:?} (retrievable)", r.id));
                    } else {
                        row.lost.push(format!("{}: needle {n:?} (LOST)", r.id));
                    }
                }
                let segs = segments(r.dialect, &after);
                if let Some(prev) = &previous {
                    if segs.len() < prev.len() || segs[..prev.len()] != prev[..] {
                        stable = false;
                    }
                }
                previous = Some(segs);
                optimized_segs.push(seg_tokens(r.dialect, &body));
            }
            row.sessions += 1;
            row.sessions_stable += usize::from(stable);
            row.cost_passthrough += baseline[session];
            row.cost_mode += session_cost(&optimized_segs);
            rows.entry((band.clone(), name.to_owned()))
                .or_default()
                .add(&session_row);
            if held_out {
                rows.entry((format!("{band} held out"), name.to_owned()))
                    .or_default()
                    .add(&session_row);
            }
        }
    }

    println!("| band | mode | requests | tokens before | tokens after | saved | untouchable by rule | saved of the rest | needle recall (in context) | retrievable | valid | prefix-stable sessions | cached session cost vs passthrough | pass p50 ms | pass p95 ms |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut report = Vec::new();
    for ((band, mode), row) in &mut rows {
        row.latencies.sort_by(f64::total_cmp);
        let saved = 1.0 - row.tokens_after as f64 / row.tokens_before.max(1) as f64;
        let untouchable = row.untouchable as f64 / row.tokens_before.max(1) as f64;
        // What was saved of the tokens a rewrite could touch at all.
        let of_rest = (row.tokens_before as f64 - row.tokens_after as f64)
            / row.tokens_before.saturating_sub(row.untouchable).max(1) as f64;
        let recall = row.needles_found as f64 / row.needles.max(1) as f64;
        let retrievable = row.needles_retrievable as f64 / row.needles.max(1) as f64;
        let valid = row.valid as f64 / row.requests.max(1) as f64;
        let cost_ratio = row.cost_mode / row.cost_passthrough.max(1e-12);
        let (p50, p95) = (
            percentile(&row.latencies, 0.5),
            percentile(&row.latencies, 0.95),
        );
        println!(
            "| {band} | {mode} | {} | {} | {} | {:.1} % | {:.1} % | {:.1} % | {:.1} % ({}/{}) | {:.1} % ({}/{}) | {:.1} % | {}/{} | {:.3}× | {:.3} | {:.3} |",
            row.requests,
            row.tokens_before,
            row.tokens_after,
            saved * 100.0,
            untouchable * 100.0,
            of_rest * 100.0,
            recall * 100.0,
            row.needles_found,
            row.needles,
            retrievable * 100.0,
            row.needles_retrievable,
            row.needles,
            valid * 100.0,
            row.sessions_stable,
            row.sessions,
            cost_ratio,
            p50,
            p95
        );
        for l in &row.lost {
            eprintln!("  {band} {mode}: {l}");
        }
        report.push(json!({
            "band": band, "mode": mode, "requests": row.requests,
            "tokens_before": row.tokens_before, "tokens_after": row.tokens_after,
            "saved_share": saved, "untouchable_tokens": row.untouchable, "untouchable_share": untouchable, "saved_of_the_rest": of_rest, "needle_recall": recall, "needle_retrievable": retrievable, "needles": row.needles,
            "valid_share": valid, "sessions": row.sessions, "sessions_prefix_stable": row.sessions_stable,
            "session_cost_ratio": cost_ratio, "pass_ms_p50": p50, "pass_ms_p95": p95,
            "lost": row.lost, "per_request": row.per_request,
        }));
    }
    println!(
        "\ndeterminism: {} of 2 fresh processes produced identical bytes for all {} (mode, request) pairs",
        deterministic_runs,
        here.len()
    );
    if let Some(path) = out_path {
        let doc = json!({"determinism": deterministic_share, "rows": report});
        std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
        eprintln!("wrote {path}");
    }
}
