#!/usr/bin/env bash
# Captures real command outputs for the savings corpus.
#
# Every file in outputs/ is the combined stdout+stderr of one real command, run on this
# machine, either against the Trimgate checkout itself or against a small throwaway
# project created here under a temporary directory. Many of the commands fail on purpose
# (compile errors, failing tests, uncaught exceptions); their exit codes are recorded in
# MANIFEST.md and otherwise ignored. Colour is forced where the tool supports it, because
# coding agents often run their shells with a TTY-like environment.
#
# Usage: bash bench/corpus/capture.sh   (needs cargo, python3, node/npm, javac/java, git,
# and the crates.io, PyPI and npm registries.)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
OUT="$here/outputs"
mkdir -p "$OUT"
rm -f "$OUT"/*.txt
T="$(mktemp -d /tmp/trimgate-corpus.XXXXXX)"
trap 'rm -rf "$T"' EXIT
ROWS="$T/manifest-rows.md"
: >"$ROWS"

# run and manifest_row: one output and its MANIFEST row.
source "$here/capture_lib.sh"

export CARGO_TERM_COLOR=always
# Throwaway crates get their own CARGO_HOME so that crates are really downloaded
# (the "Downloaded ..." lines) instead of coming from this machine's cache.
export CARGO_HOME_FRESH="$T/cargo-home"

########################################################################################
# 1. Rust: a crate with compile errors and warnings
########################################################################################
mkdir -p "$T/ledger/src"
cat >"$T/ledger/Cargo.toml" <<'EOF'
[package]
name = "ledger"
version = "0.1.0"
edition = "2021"

[dependencies]
EOF
cat >"$T/ledger/src/main.rs" <<'EOF'
use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};

mod entry;
mod report;

use entry::{Entry, Kind};

fn load(path: &str) -> io::Result<String> {
    fs::read_to_string(path)
}

fn parse_all(text: &str) -> Vec<Entry> {
    text.lines().filter_map(Entry::parse).collect()
}

fn main() {
    let text = load("ledger.csv").unwrap_or_default();
    let mut entries = parse_all(&text);
    let total: i64 = report::sum_cents(&entries);
    let by_kind: HashMap<Kind, usize> = report::count_by_kind(&entries);
    println!("{} entries, total {}", entries.len(), totl);
    for (kind, n) in &by_kind {
        println!("{:?}: {}", kind, n);
    }
    if let Some(top) = report::largest(&mut entries) {
        println!("largest: {}", report::format_line(top));
    }
}
EOF
cat >"$T/ledger/src/entry.rs" <<'EOF'
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Income,
    Expense,
    Transfer,
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub date: String,
    pub kind: Kind,
    pub cents: u64,
    pub memo: String,
}

impl Entry {
    /// Parses `2024-03-01,out,1299,coffee beans`.
    pub fn parse(line: &str) -> Option<Entry> {
        let parts: Vec<&str> = line.split(',').collect();
        if parts.len() != 4 {
            return None;
        }
        let kind = match parts[1] {
            "in" => Kind::Income,
            "out" => Kind::Expense,
            _ => Kind::Transfer,
        };
        let cents: u64 = parts[2].trim().parse().ok()?;
        let unused_trimmed = parts[3].trim();
        Some(Entry {
            date: parts[0],
            kind,
            cents,
            memo: parts[3].to_string(),
        })
    }

    pub fn is_expense(&self) -> bool {
        self.kind == Kind::Expense
    }
}
EOF
cat >"$T/ledger/src/report.rs" <<'EOF'
use crate::entry::{Entry, Kind};
use std::collections::HashMap;

pub fn sum_cents(entries: &[Entry]) -> i64 {
    let mut total: u64 = 0;
    for e in entries {
        if e.is_expense() {
            total -= e.cents;
        } else {
            total += e.cents;
        }
    }
    total
}

pub fn count_by_kind(entries: &[Entry]) -> HashMap<Kind, usize> {
    let mut counts = HashMap::new();
    for e in entries {
        *counts.entry(e.kind).or_insert(0) += 1;
    }
    counts
}

pub fn largest(entries: &mut Vec<Entry>) -> Option<&Entry> {
    let first = &entries[0];
    entries.sort_by_key(|e| e.cents);
    println!("first before sorting: {}", first.memo);
    entries.last()
}

pub fn format_line(e: &Entry) -> String {
    format!("{} {:>10} {}", e.date, format_cents(e.cents), e.memo)
}

fn percent(part: u64, whole: u64) -> f64 {
    part as f64 * 100.0 / whole as f64
}
EOF
run cargo-build-errors "$T/ledger" "cargo build --color=always"

########################################################################################
# 2. Rust: a crate with real dependencies from crates.io (fresh CARGO_HOME)
########################################################################################
mkdir -p "$T/logscan/src"
cat >"$T/logscan/Cargo.toml" <<'EOF'
[package]
name = "logscan"
version = "0.3.0"
edition = "2021"

[dependencies]
anyhow = "1"
clap = { version = "4", features = ["derive"] }
regex = "1"
serde = { version = "1", features = ["derive"] }
serde_json = "1"
chrono = { version = "0.4", features = ["serde"] }
tokio = { version = "1", features = ["rt-multi-thread", "macros", "fs", "io-util"] }
EOF
cat >"$T/logscan/src/main.rs" <<'EOF'
use anyhow::Result;
use clap::Parser;
use regex::Regex;
use serde::Serialize;

#[derive(Parser)]
struct Args {
    /// Log file to scan
    path: String,
    /// Pattern to look for
    #[arg(short, long, default_value = "ERROR")]
    pattern: String,
}

#[derive(Serialize)]
struct Hit {
    line: usize,
    text: String,
    at: chrono::DateTime<chrono::Utc>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let re = Regex::new(&args.pattern)?;
    let text = tokio::fs::read_to_string(&args.path).await?;
    let hits: Vec<Hit> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| re.is_match(l))
        .map(|(i, l)| Hit { line: i + 1, text: l.to_string(), at: chrono::Utc::now() })
        .collect();
    println!("{}", serde_json::to_string_pretty(&hits)?);
    Ok(())
}
EOF
run cargo-build-deps "$T/logscan" "CARGO_HOME=$CARGO_HOME_FRESH cargo build --color=always"
run cargo-metadata-logscan "$T/logscan" "CARGO_HOME=$CARGO_HOME_FRESH cargo metadata --format-version 1"
run cargo-tree-logscan "$T/logscan" "CARGO_HOME=$CARGO_HOME_FRESH cargo tree --color=always"
run cargo-build-vv-logscan "$T/logscan" "CARGO_HOME=$CARGO_HOME_FRESH CARGO_TARGET_DIR=target/vv cargo build -vv --color=always"

########################################################################################
# 3. Rust: cargo test with 60 passing and 3 failing tests
########################################################################################
mkdir -p "$T/durations/src" "$T/durations/tests"
cat >"$T/durations/Cargo.toml" <<'EOF'
[package]
name = "durations"
version = "0.2.1"
edition = "2021"

[dependencies]
EOF
cat >"$T/durations/src/lib.rs" <<'EOF'
//! Parsing and formatting of human durations such as `1h30m` or `45s`.

pub fn unit_seconds(unit: &str) -> u64 {
    match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => panic!("unknown unit suffix: {other:?}"),
    }
}

/// Parses `1h30m`, `45s`, `2d`. Returns None for an empty or malformed string.
pub fn parse_duration(text: &str) -> Option<u64> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut total = 0u64;
    let mut number = String::new();
    for ch in text.chars() {
        if ch.is_ascii_digit() {
            number.push(ch);
        } else {
            let n: u64 = number.parse().ok()?;
            total += n * unit_seconds(&ch.to_string());
            number.clear();
        }
    }
    if !number.is_empty() {
        return None;
    }
    Some(total)
}

pub fn format_duration(secs: u64) -> String {
    let (h, rest) = (secs / 3600, secs % 3600);
    let (m, s) = (rest / 60, rest % 60);
    let mut parts = Vec::new();
    if h > 0 {
        parts.push(format!("{h}h"));
    }
    if m > 0 {
        parts.push(format!("{m}m"));
    }
    if s > 0 || parts.is_empty() {
        parts.push(format!("{s}s"));
    }
    parts.join(" ")
}

pub fn slugify(text: &str) -> String {
    let mut out = String::new();
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}
EOF
{
  echo "use durations::*;"
  echo
  i=0
  for c in "45s:45" "1m:60" "90s:90" "1h:3600" "2h:7200" "1h30m:5400" "2d:172800" "1d1s:86401" \
           "10m:600" "59s:59" "3h2m1s:10921" "0s:0" "12h:43200" "7d:604800" "1m1s:61" "100s:100" \
           "30m:1800" "1h1m:3660" "4h:14400" "5m5s:305"; do
    i=$((i+1)); t=${c%%:*}; v=${c##*:}
    printf '#[test]\nfn parse_%02d_%s() {\n    assert_eq!(parse_duration("%s"), Some(%s));\n}\n\n' "$i" "$t" "$t" "$v"
  done
  i=0
  for c in "45:45s" "60:1m" "61:1m 1s" "3600:1h" "3660:1h 1m" "5400:1h 30m" "0:0s" "59:59s" \
           "7200:2h" "10921:3h 2m 1s" "600:10m" "86400:24h" "90:1m 30s" "3599:59m 59s" "120:2m" \
           "3601:1h 1s" "7260:2h 1m" "1:1s" "300:5m" "43200:12h"; do
    i=$((i+1)); s=${c%%:*}; v=${c##*:}
    printf '#[test]\nfn format_%02d_%s() {\n    assert_eq!(format_duration(%s), "%s");\n}\n\n' "$i" "$s" "$s" "$v"
  done
  i=0
  for c in "Hello World:hello-world" "  padded  :padded" "a--b:a-b" "Rust 2021!:rust-2021" \
           "snake_case_name:snake-case-name" "CamelCase:camelcase" "x:x" "1 2 3:1-2-3" \
           "trailing!!!:trailing" "mixed-UP text:mixed-up-text" "tabs	here:tabs-here" \
           "dots.in.name:dots-in-name" "v1.2.3:v1-2-3" "__init__:init" "spaces   between:spaces-between" \
           "ends with -:ends-with" "émoji ok:moji-ok" "A/B/C:a-b-c" "key=value:key-value" "ok:ok"; do
    i=$((i+1)); s=${c%%:*}; v=${c##*:}
    printf '#[test]\nfn slug_%02d() {\n    assert_eq!(slugify("%s"), "%s");\n}\n\n' "$i" "$s" "$v"
  done
  cat <<'EOF'
#[test]
fn format_hours_and_seconds_keeps_zero_minutes() {
    assert_eq!(format_duration(3605), "1h 0m 5s");
}

#[test]
fn parse_weeks() {
    assert_eq!(parse_duration("2w"), Some(1_209_600));
}

#[test]
fn parse_then_format_round_trip() {
    let secs = parse_duration(" ").unwrap();
    assert_eq!(format_duration(secs), "0s");
}
EOF
} >"$T/durations/tests/durations.rs"
run cargo-test-failures "$T/durations" "RUST_BACKTRACE=1 cargo test --color=always"

########################################################################################
# 4. Rust: a panic with RUST_BACKTRACE=full
########################################################################################
mkdir -p "$T/tokenizer/src"
cat >"$T/tokenizer/Cargo.toml" <<'EOF'
[package]
name = "tokenizer"
version = "0.1.0"
edition = "2021"

[dependencies]
EOF
cat >"$T/tokenizer/src/main.rs" <<'EOF'
mod lexer;

fn main() {
    let sources = ["let x = 1;", "let y = (2 + 3;", "fn f() { return [1, 2"];
    for (i, src) in sources.iter().enumerate() {
        let tokens = lexer::tokenize(src);
        println!("source {i}: {} tokens", tokens.len());
        let depth = lexer::max_depth(&tokens);
        println!("source {i}: max depth {depth}");
    }
}
EOF
cat >"$T/tokenizer/src/lexer.rs" <<'EOF'
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Ident(String),
    Number(i64),
    Open(char),
    Close(char),
    Punct(char),
}

pub fn tokenize(src: &str) -> Vec<Token> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let s: String = chars[start..i].iter().collect();
            out.push(Token::Number(s.parse().unwrap()));
        } else if c.is_alphabetic() {
            let start = i;
            while i < chars.len() && chars[i].is_alphanumeric() {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if "([{".contains(c) {
            out.push(Token::Open(c));
            i += 1;
        } else if ")]}".contains(c) {
            out.push(Token::Close(c));
            i += 1;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

fn closing_for(stack: &[char], depth: usize) -> char {
    match stack[depth] {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

fn check_balanced(tokens: &[Token]) -> Vec<char> {
    let mut stack = Vec::new();
    for t in tokens {
        match t {
            Token::Open(c) => stack.push(*c),
            Token::Close(_) => {
                stack.pop();
            }
            _ => {}
        }
    }
    stack
}

pub fn max_depth(tokens: &[Token]) -> usize {
    let open = check_balanced(tokens);
    if !open.is_empty() {
        // Report which closer is missing for the innermost unclosed bracket.
        let missing = closing_for(&open, open.len());
        eprintln!("unbalanced: missing {missing}");
    }
    let mut depth = 0usize;
    let mut best = 0usize;
    for t in tokens {
        match t {
            Token::Open(_) => {
                depth += 1;
                best = best.max(depth);
            }
            Token::Close(_) => depth -= 1,
            _ => {}
        }
    }
    best
}
EOF
(cd "$T/tokenizer" && CARGO_TERM_COLOR=never cargo build -q 2>/dev/null) || true
run rust-panic-backtrace-full "$T/tokenizer" "RUST_BACKTRACE=full ./target/debug/tokenizer"

########################################################################################
# 5. Python: pytest with ~150 passing parametrized tests and 4 failures
########################################################################################
mkdir -p "$T/inventory/inventory" "$T/inventory/tests"
cat >"$T/inventory/inventory/__init__.py" <<'EOF'
"""Small inventory toolkit: loading catalogs, pricing and summaries."""
EOF
cat >"$T/inventory/inventory/pricing.py" <<'EOF'
from decimal import Decimal, ROUND_HALF_UP

TAX_RATES = {"standard": Decimal("0.20"), "reduced": Decimal("0.05"), "zero": Decimal("0")}


def apply_discount(price, percent):
    if not 0 <= percent <= 100:
        raise ValueError(f"discount out of range: {percent}")
    return (Decimal(price) * (100 - Decimal(percent)) / 100).quantize(Decimal("0.01"), ROUND_HALF_UP)


def with_tax(price, band="standard"):
    rate = TAX_RATES[band]
    return (Decimal(price) * (1 + rate)).quantize(Decimal("0.01"), ROUND_HALF_UP)


def parse_config(text):
    """Parses `key=value;key=value` into a dict with int values where possible."""
    out = {}
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        key, _, value = part.partition("=")
        value = value.strip()
        out[key.strip()] = int(value) if value.isdigit() else value
    return out


def summarize(items):
    summary = {"count": 0, "total": Decimal("0"), "categories": {}}
    for item in items:
        summary["count"] += 1
        summary["total"] += Decimal(item["price"]) * item.get("qty", 1)
        cat = item.get("category", "misc")
        summary["categories"][cat] = summary["categories"].get(cat, 0) + 1
    return summary


def sort_skus(skus):
    return sorted(skus, key=lambda s: (s.split("-")[0], s.split("-")[-1]))
EOF
cat >"$T/inventory/inventory/loader.py" <<'EOF'
import csv
import io

from .pricing import with_tax


class CatalogError(Exception):
    pass


def _coerce_price(raw):
    return float(raw)


def _parse_row(row, line_no):
    return {
        "sku": row["sku"],
        "name": row["name"],
        "price": _coerce_price(row["price"]),
        "gross": with_tax(row["price"], row.get("band") or "standard"),
        "line": line_no,
    }


def _parse_rows(reader):
    return [_parse_row(row, i) for i, row in enumerate(reader, start=2)]


def load_catalog(text):
    reader = csv.DictReader(io.StringIO(text))
    return _parse_rows(reader)
EOF
cat >"$T/inventory/tests/test_pricing.py" <<'EOF'
from decimal import Decimal

import pytest

from inventory.pricing import apply_discount, parse_config, sort_skus, summarize, with_tax

DISCOUNT_CASES = [(p, d) for p in ("9.99", "10.00", "19.95", "100", "0.50", "249.00", "3.33", "1299.99") for d in (0, 5, 10, 15, 25, 50, 75, 100)]


@pytest.mark.parametrize("price,percent", DISCOUNT_CASES)
def test_apply_discount(price, percent):
    expected = (Decimal(price) * (100 - percent) / 100).quantize(Decimal("0.01"))
    assert abs(apply_discount(price, percent) - expected) <= Decimal("0.01")


@pytest.mark.parametrize("percent", [-1, 101, 250, -50])
def test_apply_discount_rejects_out_of_range(percent):
    with pytest.raises(ValueError):
        apply_discount("10", percent)


TAX_CASES = [(p, b) for p in ("1.00", "2.50", "9.99", "10", "99.99", "120.00", "0.01", "5", "0.99", "15") for b in ("standard", "reduced", "zero")]


@pytest.mark.parametrize("price,band", TAX_CASES)
def test_with_tax(price, band):
    assert with_tax(price, band) >= Decimal(price)


CONFIG_CASES = [(f"retries={n};timeout={n * 10};mode=fast", {"retries": n, "timeout": n * 10, "mode": "fast"}) for n in range(1, 41)]
CONFIG_CASES[16] = ("retries=17; timeout=-5 ;mode=fast", {"retries": 17, "timeout": -5, "mode": "fast"})


@pytest.mark.parametrize("text,expected", CONFIG_CASES, ids=[f"case-{i}" for i in range(len(CONFIG_CASES))])
def test_parse_config(text, expected):
    assert parse_config(text) == expected


SKU_CASES = [[f"{a}-{n:03d}" for n in (3, 1, 2)] for a in ("AB", "CD", "EF", "GH", "IJ", "KL", "MN", "OP", "QR", "ST")]


@pytest.mark.parametrize("skus", SKU_CASES)
def test_sort_skus_within_prefix(skus):
    assert sort_skus(skus) == sorted(skus)


def test_sort_skus_numeric_suffixes():
    skus = ["AB-10", "AB-9", "AB-100", "CD-2", "AB-1"]
    assert sort_skus(skus) == ["AB-1", "AB-9", "AB-10", "AB-100", "CD-2"]


def test_summarize_categories():
    items = [
        {"sku": "AB-1", "price": "2.50", "qty": 4, "category": "tea"},
        {"sku": "AB-2", "price": "7.25", "category": "coffee"},
        {"sku": "CD-9", "price": "1.10", "qty": 10},
        {"sku": "EF-3", "price": "12.00", "qty": 1, "category": "coffee"},
    ]
    assert summarize(items) == {
        "count": 4,
        "total": Decimal("40.25"),
        "categories": {"tea": 1, "coffee": 2, "misc": 1, "snacks": 0},
    }
EOF
cat >"$T/inventory/tests/test_loader.py" <<'EOF'
import pytest

from inventory.loader import load_catalog

GOOD = """sku,name,price,band
AB-1,Green tea,2.50,reduced
AB-2,Espresso beans,7.25,standard
CD-9,Oat biscuits,1.10,zero
"""


@pytest.mark.parametrize("column", ["sku", "name", "price", "gross", "line"])
def test_catalog_rows_have_column(column):
    rows = load_catalog(GOOD)
    assert all(column in r for r in rows)


def test_catalog_line_numbers():
    assert [r["line"] for r in load_catalog(GOOD)] == [2, 3, 4]


def test_catalog_european_prices():
    text = GOOD + "EF-3,Dark chocolate,\"12,50\",standard\n"
    rows = load_catalog(text)
    assert rows[-1]["price"] == 12.5
EOF
python3 -m venv "$T/inventory/.venv"
run pip-install-pytest "$T/inventory" ".venv/bin/pip install --no-cache-dir pytest"
run pytest-failures "$T/inventory" ".venv/bin/python -m pytest -v --color=yes"
run pytest-vv-pricing "$T/inventory" ".venv/bin/python -m pytest -vv --color=yes tests/test_pricing.py"

########################################################################################
# 6. Python stack traces
########################################################################################
mkdir -p "$T/pyapp/app"
cat >"$T/pyapp/app/__init__.py" <<'EOF'
EOF
cat >"$T/pyapp/app/settings.py" <<'EOF'
import json


class SettingsError(Exception):
    pass


def _decode(blob, source):
    return json.loads(blob)


def _read_layer(layers, name):
    blob = layers[name]
    try:
        return _decode(blob, name)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"layer {name!r} is not valid JSON") from exc


def merge_layers(layers, order):
    merged = {}
    for name in order:
        merged.update(_read_layer(layers, name))
    return merged
EOF
cat >"$T/pyapp/app/main.py" <<'EOF'
from app.settings import merge_layers

LAYERS = {
    "defaults": '{"port": 8080, "workers": 4, "log_level": "info"}',
    "site": '{"workers": 8, "upstreams": ["a.internal", "b.internal"]}',
    "local": '{"log_level": "debug", "port": 9090,}',
}


def build_server_config(order):
    cfg = merge_layers(LAYERS, order)
    return {"listen": f"0.0.0.0:{cfg['port']}", **cfg}


def main():
    for order in (["defaults"], ["defaults", "site"], ["defaults", "site", "local"]):
        print(order, "->", build_server_config(order))


if __name__ == "__main__":
    main()
EOF
cat >"$T/pyapp/tree.py" <<'EOF'
"""Walks a category tree; a cycle in the data makes it recurse forever."""

CATEGORIES = {
    "root": ["books", "music"],
    "books": ["fiction", "science"],
    "fiction": ["classics"],
    "classics": [],
    "science": ["physics"],
    "physics": ["books"],
    "music": [],
}


def depth_of(node, seen_path=()):
    children = CATEGORIES[node]
    if not children:
        return 1
    return 1 + max(depth_of(child, seen_path + (node,)) for child in children)


def report():
    for top in CATEGORIES["root"]:
        print(top, depth_of(top))


if __name__ == "__main__":
    report()
EOF
run python-traceback-chained "$T/pyapp" "python3 -m app.main"
run python-recursionerror "$T/pyapp" "python3 tree.py"
run python-recursionerror-tail "$T/pyapp" "python3 tree.py 2>&1 | tail -n 40"
run cat-n-pyapp-tree-py "$T/pyapp" "cat -n tree.py"
run python-modulenotfound "$T/pyapp" "python3 -c 'import ruamel.yaml'"

########################################################################################
# 7. Node: npm install (noisy), a failing install, tsc errors, an uncaught exception
########################################################################################
mkdir -p "$T/webapp/src"
cat >"$T/webapp/package.json" <<'EOF'
{
  "name": "webapp",
  "version": "1.4.0",
  "private": true,
  "scripts": {
    "build": "tsc",
    "test": "jest",
    "lint": "eslint src"
  },
  "dependencies": {
    "express": "^4.19.2",
    "lodash": "^4.17.21"
  },
  "devDependencies": {
    "@types/express": "^4.17.21",
    "@types/lodash": "^4.17.0",
    "eslint": "^8.57.0",
    "jest": "^29.7.0",
    "typescript": "^5.4.5"
  }
}
EOF
cat >"$T/webapp/tsconfig.json" <<'EOF'
{
  "compilerOptions": {
    "target": "ES2020",
    "module": "commonjs",
    "strict": true,
    "esModuleInterop": true,
    "outDir": "dist"
  },
  "include": ["src"]
}
EOF
cat >"$T/webapp/src/users.ts" <<'EOF'
export interface User {
  id: number;
  email: string;
  displayName?: string;
  roles: string[];
}

export function findUser(users: User[], id: number): User | undefined {
  return users.find((u) => u.id === id);
}

export function greeting(user: User): string {
  return `Hello, ${user.displayName.toUpperCase()}`;
}
EOF
cat >"$T/webapp/src/server.ts" <<'EOF'
import express from "express";
import _ from "lodash";
import { findUser, greeting, User } from "./users";

const app = express();
const users: User[] = [
  { id: 1, email: "ada@example.com", roles: ["admin"] },
  { id: 2, email: "linus@example.com", displayName: "Linus", roles: "dev" },
];

app.get("/users/:id", (req, res) => {
  const user = findUser(users, req.params.id);
  if (!user) {
    res.status(404).json({ error: "not found" });
    return;
  }
  res.json({ ...user, greeting: greeting(user), admin: user.isAdmin });
});

app.get("/users", (_req, res) => {
  const byRole = _.groupBy(users, (u) => u.roles[0]);
  const count: string = users.length;
  res.json({ count, byRole });
});

app.listen(process.env.PORT ?? 3000);
EOF
run npm-install-http "$T/webapp" "npm install --loglevel=http --color=always --cache $T/npm-cache"
run tsc-errors-pretty "$T/webapp" "npx tsc --noEmit --pretty true"
run tsc-errors-plain "$T/webapp" "npx tsc --noEmit"
run npm-ls-all-json "$T/webapp" "npm ls --all --json"
run npm-ls-all "$T/webapp" "npm ls --all"
run package-lock-json "$T/webapp" "cat package-lock.json"
run ls-laR-node-modules-express "$T/webapp" "ls -laR node_modules/express node_modules/body-parser node_modules/qs"
run npm-view-express-json "$T/webapp" "npm view express --json"
run npm-view-typescript-json "$T/webapp" "npm view typescript --json"

mkdir -p "$T/widget"
cat >"$T/widget/package.json" <<'EOF'
{
  "name": "widget",
  "version": "0.1.0",
  "private": true,
  "dependencies": {
    "react": "^17.0.2"
  }
}
EOF
run npm-install-eresolve "$T/widget" "npm install react-dom@18.3.1 --loglevel=http --color=always --cache $T/npm-cache"
run npm-install-etarget "$T/widget" "npm install lodash@^5.2.0 --color=always --cache $T/npm-cache"

mkdir -p "$T/webapp/lib"
cat >"$T/webapp/lib/store.js" <<'EOF'
'use strict';
const orders = new Map([
  ['o-1001', { id: 'o-1001', customer: { id: 7, name: 'Ada' }, lines: [{ sku: 'AB-1', qty: 2 }] }],
  ['o-1002', { id: 'o-1002', lines: [{ sku: 'CD-9', qty: 1 }] }],
]);

function getOrder(id) {
  return orders.get(id);
}

module.exports = { getOrder };
EOF
cat >"$T/webapp/lib/invoice.js" <<'EOF'
'use strict';
const { getOrder } = require('./store');

function customerLabel(order) {
  return `${order.customer.name} (#${order.customer.id})`;
}

function renderInvoice(orderId) {
  const order = getOrder(orderId);
  const header = `Invoice for ${customerLabel(order)}`;
  const body = order.lines.map((l) => `${l.sku} x${l.qty}`).join('\n');
  return `${header}\n${body}`;
}

module.exports = { renderInvoice };
EOF
cat >"$T/webapp/lib/batch.js" <<'EOF'
'use strict';
const { renderInvoice } = require('./invoice');

function renderAll(ids) {
  return ids.map((id) => renderInvoice(id));
}

module.exports = { renderAll };
EOF
cat >"$T/webapp/run-invoices.js" <<'EOF'
'use strict';
const { renderAll } = require('./lib/batch');

const ids = process.argv.slice(2);
for (const text of renderAll(ids)) {
  console.log(text);
  console.log('---');
}
EOF
run node-uncaught-typeerror "$T/webapp" "node run-invoices.js o-1001 o-1002"
run node-module-not-found "$T/webapp" "node -e \"require('left-pad')\""

########################################################################################
# 8. Java: an exception with a Caused by: chain
########################################################################################
mkdir -p "$T/billing/src/com/example/billing"
cat >"$T/billing/src/com/example/billing/RateTable.java" <<'EOF'
package com.example.billing;

import java.util.HashMap;
import java.util.Map;

public class RateTable {
    private final Map<String, Integer> centsPerUnit = new HashMap<>();

    public void load(String[] lines) {
        for (int i = 0; i < lines.length; i++) {
            try {
                String[] parts = lines[i].split("=");
                centsPerUnit.put(parts[0].trim(), parseCents(parts[1]));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad rate on line " + (i + 1) + ": " + lines[i], e);
            }
        }
    }

    private static int parseCents(String raw) {
        return Integer.parseInt(raw.trim());
    }

    public int rate(String unit) {
        return centsPerUnit.getOrDefault(unit, 0);
    }
}
EOF
cat >"$T/billing/src/com/example/billing/InvoiceService.java" <<'EOF'
package com.example.billing;

public class InvoiceService {
    private final RateTable rates = new RateTable();

    public void start(String[] config) {
        try {
            rates.load(config);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("InvoiceService failed to start", e);
        }
    }

    public int price(String unit, int qty) {
        return rates.rate(unit) * qty;
    }
}
EOF
cat >"$T/billing/src/com/example/billing/Main.java" <<'EOF'
package com.example.billing;

public class Main {
    public static void main(String[] args) {
        String[] config = {"cpu-hour = 12", "gb-month = 3", "egress-gb = 0.09", "requests = 1"};
        InvoiceService service = new InvoiceService();
        service.start(config);
        System.out.println("cpu-hour x 10 = " + service.price("cpu-hour", 10));
    }
}
EOF
(cd "$T/billing" && mkdir -p out && javac -d out src/com/example/billing/*.java)
run java-caused-by "$T/billing" "java -cp out com.example.billing.Main"

########################################################################################
# 8b. Reads of the scratch projects' sources (what an agent's read_file returns)
########################################################################################
run cat-n-ledger-report-rs "$T/ledger" "cat -n src/report.rs"
run cat-n-ledger-entry-rs "$T/ledger" "cat -n src/entry.rs"
run cat-n-ledger-main-rs "$T/ledger" "cat -n src/main.rs"
run cat-n-durations-lib-rs "$T/durations" "cat -n src/lib.rs"
run cat-n-inventory-pricing-py "$T/inventory" "cat -n inventory/pricing.py"
run cat-n-inventory-loader-py "$T/inventory" "cat -n inventory/loader.py"
run cat-n-inventory-test-pricing-py "$T/inventory" "cat -n tests/test_pricing.py"
run cat-n-pyapp-settings-py "$T/pyapp" "cat -n app/settings.py"
run cat-n-webapp-invoice-js "$T/webapp" "cat -n lib/invoice.js"
run cat-n-webapp-server-ts "$T/webapp" "cat -n src/server.ts"
run cat-n-billing-ratetable-java "$T/billing" "cat -n src/com/example/billing/RateTable.java"
run cat-n-tokenizer-lexer-rs "$T/tokenizer" "cat -n src/lexer.rs"
run grep-billing-egress "$T/billing" "grep -rn egress src"
run ls-la-ledger "$T/ledger" "ls -la . src"
run cat-webapp-package-json "$T/webapp" "cat package.json"
run grep-durations-format "$T/durations" "grep -rn 'fn format_duration' ."
run grep-webapp-customer "$T/webapp" "grep -rn 'customer' lib run-invoices.js"

########################################################################################
# 9. The Trimgate checkout: git, grep, find, ls, cat
########################################################################################
# A commit roughly in the middle of the history, and an older one for a large diff.
ncommits=$(git -C "$repo" rev-list --count HEAD)
old=$(git -C "$repo" rev-list HEAD | sed -n "$((ncommits * 2 / 3))p")
run git-log-stat-200 "$repo" "git -C $repo log --stat -n 200"
run git-log-stat-full "$repo" "git -C $repo log --stat"
run git-log-oneline-10 "$repo" "git -C $repo log --oneline -n 10"
run git-log-format "$repo" "git -C $repo log --format='%h %s'"
run git-diff-core-src "$repo" "git -C $repo diff $old..HEAD -- gateway-core/src"
run git-show-stat-head3 "$repo" "git -C $repo show --stat HEAD~3"
run git-show-head3-color "$repo" "git -C $repo -c color.ui=always show HEAD~3 -- gateway-core/src"
cat >"$T/gitlog2json.py" <<'EOF'
import json, subprocess, sys
repo = sys.argv[1]
fmt = "%H%x1f%h%x1f%an%x1f%ae%x1f%aI%x1f%cI%x1f%P%x1f%s%x1f%b%x1e"
raw = subprocess.run(["git", "-C", repo, "log", f"--format={fmt}", "--numstat"], capture_output=True, text=True, check=True).stdout
out = []
for rec in raw.split("\x1e"):
    rec = rec.strip("\n")
    if not rec.strip():
        continue
    head, _, stats = rec.partition("\x1e")
    fields = head.split("\x1f")
    if len(fields) < 9:
        continue
    body_and_stats = fields[8]
    out.append({
        "sha": fields[0], "short_sha": fields[1],
        "author": {"name": fields[2], "email": fields[3], "date": fields[4]},
        "committer_date": fields[5], "parents": fields[6].split(),
        "subject": fields[7], "body": body_and_stats.strip(),
    })
# numstat lines follow each record; attach them to the previous commit
files = subprocess.run(["git", "-C", repo, "log", "--format=%x1e%H", "--numstat"], capture_output=True, text=True, check=True).stdout
by_sha = {}
for chunk in files.split("\x1e"):
    lines = [l for l in chunk.splitlines() if l.strip()]
    if not lines:
        continue
    sha, rows = lines[0], lines[1:]
    by_sha[sha] = [{"path": r.split("\t")[2], "additions": int(r.split("\t")[0]) if r.split("\t")[0] != "-" else None,
                    "deletions": int(r.split("\t")[1]) if r.split("\t")[1] != "-" else None} for r in rows]
for c in out:
    c["files"] = by_sha.get(c["sha"], [])
    c["stats"] = {"additions": sum(f["additions"] or 0 for f in c["files"]), "deletions": sum(f["deletions"] or 0 for f in c["files"]), "total_files": len(c["files"])}
json.dump(out, sys.stdout, indent=2)
print()
EOF
run git-log-json "$repo" "python3 $T/gitlog2json.py $repo"
run grep-fn-core-src "$repo" "grep -rn 'fn ' gateway-core/src"
run grep-error-rs "$repo" "grep -rn 'error' --include=*.rs --exclude-dir=target --exclude-dir=.git --exclude-dir=node_modules --exclude-dir=.venv ."
run grep-pub-fn-routing "$repo" "grep -n 'pub fn' gateway-core/src/routing.rs"
run find-repo-head "$repo" "find $repo -path '*/node_modules' -prune -o -path '*/target' -prune -o -path '*/.git' -prune -o -print | head -n 4000"
run find-repo-pruned "$repo" "find $repo -path '*/node_modules' -prune -o -path '*/target' -prune -o -path '*/.git' -prune -o -path '*/.venv' -prune -o -path '*/fuzz/corpus' -prune -o -path '*/fuzz/results' -prune -o -path '*/fuzz/target' -prune -o -print"
run ls-laR-core-src "$repo" "ls -laR $repo/gateway-core/src"
run ls-laR-core-head "$repo" "ls -laR $repo/gateway-core | head -n 3000"
run ls-la-scripts "$repo" "ls -la scripts"
run wc-core-src "$repo" "wc -l gateway-core/src/*.rs"
run cat-test-sh "$repo" "cat scripts/test.sh"
run cat-readme "$repo" "cat README.md"
run cat-n-sniff-rs "$repo" "cat -n gateway-core/src/sniff.rs"
run cat-n-routing-rs "$repo" "cat -n gateway-core/src/routing.rs"
run cat-n-config-rs "$repo" "cat -n gateway-core/src/config.rs"
run cat-n-proxy-rs "$repo" "cat -n gateway-core/src/proxy.rs"
run cat-n-error-rs "$repo" "cat -n gateway-core/src/error.rs"
run cat-n-relay-rs "$repo" "cat -n gateway-core/src/relay.rs"
run cat-n-upstream-rs "$repo" "cat -n gateway-core/src/upstream.rs"
run cat-n-usage-rs "$repo" "cat -n gateway-core/src/usage.rs"
run cat-n-bench-py "$repo" "cat -n bench/bench.py"
run cargo-version "$repo" "cargo --version && rustc --version && node --version && python3 --version"

########################################################################################
# 10. Agents' tool results: commands above, run by real coding-agent CLIs
########################################################################################
# agent_capture.py points a CLI at a stand-in provider that asks it to run one command
# with its own shell tool; the output file is the tool result exactly as the CLI sent it
# back, the agent's wrapper around the command's output included:
# - Codex CLI 0.171 (exec_command): a `Chunk ID:` ... `Output:` header, then the output;
# - Codex CLI 0.45 (shell): a JSON string `{"output":...,"metadata":{...}}`; this release
#   cuts an output over 10 KiB or 256 lines to its head and tail itself;
# - Claude Code 2.1 (Bash): `Exit code N` above a failure's output, a reminder below.
agent_cli() { # agent_cli DIR PACKAGE: installs one CLI release under $T/agents/DIR
  mkdir -p "$T/agents/$1"
  (cd "$T/agents/$1" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error "$2" >/dev/null)
}
agent_cli codex-0.171 @openai/codex@0.171.0
agent_cli codex-0.45 @openai/codex@0.45.0
agent_cli claude-2.1 @anthropic-ai/claude-code@2.1.332
capture="python3 $here/agent_capture.py"
codex_new="$T/agents/codex-0.171/node_modules/.bin/codex"
codex_old="$T/agents/codex-0.45/node_modules/.bin/codex"
claude="$T/agents/claude-2.1/node_modules/.bin/claude"
run codex-exec-git-log-format "$repo" "$capture codex $codex_new . \"git log --format='%h %s'\""
run codex-exec-npm-ls-all "$T/webapp" "$capture codex $codex_new . 'npm ls --all'"
run codex-exec-git-log-stat "$repo" "$capture codex $codex_new . 'git log --stat -n 30'"
run codex-shell-git-log-format "$repo" "$capture codex $codex_old . \"git log --format='%h %s'\""
run codex-shell-npm-ls-all "$T/webapp" "$capture codex $codex_old . 'npm ls --all'"
run claude-bash-git-log-format "$repo" "$capture claude $claude . \"git log --format='%h %s'\""
run claude-bash-tsc-errors "$T/webapp" "$capture claude $claude . 'npx tsc --noEmit'"

########################################################################################
{
  echo "# Captured outputs"
  echo
  echo "Each \`*.txt\` here is the combined stdout+stderr of the command below, run by"
  echo "\`bench/corpus/capture.sh\` on $(uname -sm), $(cargo --version | cut -d' ' -f1-2), node $(node --version), $(python3 --version)."
  echo "\`\$TMP\` is the throwaway directory that capture.sh creates (and deletes) for the scratch projects;"
  echo "the outputs themselves still show its real name. Non-zero exit codes are intentional."
  echo
  cat "$ROWS"
} >"$OUT/MANIFEST.md"
du -sh "$OUT"
