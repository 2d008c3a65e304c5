//! Behaviour of [`compact`] on real tool outputs (captured on a dev machine with colours
//! forced, as agents often run them) and property tests over generated logs.

use proptest::prelude::*;

use super::{compact, Level};

const CARGO_BUILD_ERRORS: &str = include_str!("fixtures/cargo_build_errors.txt");
const CARGO_TEST_FAIL: &str = include_str!("fixtures/cargo_test_fail.txt");
const CARGO_TEST_FAIL_NOBT: &str = include_str!("fixtures/cargo_test_fail_nobt.txt");
const FIND: &str = include_str!("fixtures/find.txt");
const GCC_ERRORS: &str = include_str!("fixtures/gcc_errors.txt");
const GIT_LOG_STAT: &str = include_str!("fixtures/git_log_stat.txt");
const GREP_RN: &str = include_str!("fixtures/grep_rn.txt");
const JAVA_TRACE: &str = include_str!("fixtures/java_trace.txt");
const LS_LAR: &str = include_str!("fixtures/ls_laR.txt");
const NODE_TRACE: &str = include_str!("fixtures/node_trace.txt");
const NPM_INSTALL: &str = include_str!("fixtures/npm_install.txt");
const PYTEST_FAIL: &str = include_str!("fixtures/pytest_fail.txt");
const PYTHON_RECURSION: &str = include_str!("fixtures/python_recursion.txt");
const PYTHON_TRACEBACK: &str = include_str!("fixtures/python_traceback.txt");

const FIXTURES: &[(&str, &str)] = &[
    ("cargo_build_errors", CARGO_BUILD_ERRORS),
    ("cargo_test_fail", CARGO_TEST_FAIL),
    ("cargo_test_fail_nobt", CARGO_TEST_FAIL_NOBT),
    ("find", FIND),
    ("gcc_errors", GCC_ERRORS),
    ("git_log_stat", GIT_LOG_STAT),
    ("grep_rn", GREP_RN),
    ("java_trace", JAVA_TRACE),
    ("ls_laR", LS_LAR),
    ("node_trace", NODE_TRACE),
    ("npm_install", NPM_INSTALL),
    ("pytest_fail", PYTEST_FAIL),
    ("python_recursion", PYTHON_RECURSION),
    ("python_traceback", PYTHON_TRACEBACK),
];

const LEVELS: [Level; 4] = [
    Level::Light,
    Level::Standard,
    Level::Aggressive,
    Level::Auto,
];

/// Compacts and insists something came back; read with the legend's marks put back, as
/// the rooms wrote it (the legend has tests of its own).
fn run(text: &str, level: Level) -> String {
    let out = compact(text, level).unwrap_or_else(|| panic!("expected a rewrite at {level:?}"));
    super::legend::expand(&out)
}

fn assert_contains_all(out: &str, facts: &[&str]) {
    for fact in facts {
        assert!(out.contains(fact), "missing {fact:?} in:\n{out}");
    }
}

#[test]
#[ignore = "writes every fixture's compaction to /tmp/compact_dump for inspection"]
fn dump_fixtures() {
    let _ = std::fs::create_dir_all("/tmp/compact_dump");
    for (name, text) in FIXTURES {
        for level in LEVELS {
            let out = compact(text, level).unwrap_or_else(|| "<None>".into());
            let _ = std::fs::write(format!("/tmp/compact_dump/{name}.{level:?}.txt"), &out);
            println!("{name:<22} {level:?}: {} -> {}", text.len(), out.len());
        }
    }
}

/// Every fixture, every level: shorter, escape-free, deterministic, and no `\r` left.
#[test]
fn every_fixture_compacts_shorter_and_clean_at_every_level() {
    for (name, text) in FIXTURES {
        for level in LEVELS {
            let Some(out) = compact(text, level) else {
                continue;
            };
            assert!(out.len() < text.len(), "{name} {level:?} grew");
            assert!(!out.contains('\x1b'), "{name} {level:?} kept an escape");
            assert_eq!(
                compact(text, level),
                Some(out),
                "{name} {level:?} not deterministic"
            );
        }
    }
}

/// Markers use thousands separators and never read as instructions.
#[test]
fn markers_are_factual() {
    let text: String = (0..3000)
        .map(|i| format!("step {i} of the job\n"))
        .collect();
    let out = run(&format!("{text}ERROR: it broke\n{text}"), Level::Standard);
    assert!(out.contains("ERROR: it broke"));
    for line in out.lines().filter(|l| l.starts_with("[…")) {
        assert!(line.ends_with("…]"), "{line}");
        assert!(line.contains(" elided"), "{line}");
    }
}

// ---- cargo ----

/// A failing cargo test run keeps panics, assertion values, locations, the failures list
/// and the summary, and counts the passing tests.
#[test]
fn cargo_test_keeps_failures_and_counts_passes() {
    let out = run(CARGO_TEST_FAIL, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "[… 40 passing tests elided …]",
            "test tests::parses_the_header_row ... FAILED",
            "test tests::rejects_empty_input ... FAILED",
            "---- tests::parses_the_header_row stdout ----",
            "panicked at src/lib.rs:89:9:",
            "assertion `left == right` failed: header width mismatch",
            "  left: 4",
            " right: 5",
            "index out of bounds: the len is 0 but the index is 3",
            "tproj::tests::rejects_empty_input",
            "at ./src/lib.rs:94:18",
            "failures:\n    tests::parses_the_header_row\n    tests::rejects_empty_input",
            "test result: FAILED. 40 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out",
            "error: test failed, to rerun pass `--lib`",
            "library frames elided (",
        ],
    );
    assert!(!out.contains("case_07_adds_numbers"));
    assert!(!out.contains("core::panicking::panic_fmt"));
    assert!(out.len() * 2 < CARGO_TEST_FAIL.len());
}

/// Light only strips colours and folds exact repeats: every test line is still there.
#[test]
fn cargo_test_at_light_keeps_every_test_line() {
    let out = run(CARGO_TEST_FAIL, Level::Light);
    assert!(out.contains("test tests::case_07_adds_numbers ... ok"));
    assert!(out.contains("core::panicking::panic_fmt"));
    assert!(!out.contains('\x1b'));
}

/// Compiler errors stay whole at every level; Aggressive cuts warnings to headline and
/// location.
#[test]
fn cargo_build_errors_keep_every_error_block() {
    for level in [Level::Standard, Level::Aggressive] {
        let out = run(CARGO_BUILD_ERRORS, level);
        assert_contains_all(
            &out,
            &[
                "error[E0425]: cannot find value `missing_offset` in this scope",
                "   --> src/lib.rs:111:38",
                "error[E0308]: mismatched types",
                "   --> src/lib.rs:100:18",
                "expected `u32`, found `usize`",
                "help: you can convert a `usize` to a `u32` and panic if the converted value doesn't fit",
                "   --> src/lib.rs:107:5",
                "expected `String`, found `u32`",
                "Some errors have detailed explanations: E0308, E0425.",
                "error: could not compile `tproj` (lib) due to 4 previous errors",
                "warning: unused variable: `unused_a`",
                " --> dep_alpha/src/lib.rs:1:32",
                "warning: function `helper_never_called` is never used",
                "warning: `dep_alpha` (lib) generated 6 warnings",
            ],
        );
    }
    let aggressive = run(CARGO_BUILD_ERRORS, Level::Aggressive);
    assert!(aggressive.contains("warning detail lines elided …]"));
    assert!(!aggressive.contains("help: if this is intentional, prefix it with an underscore"));
    let standard = run(CARGO_BUILD_ERRORS, Level::Standard);
    assert!(standard.contains("help: if this is intentional, prefix it with an underscore: `_m`"));
}

/// Long runs of `Compiling` lines are counted; the build's result stays.
#[test]
fn compiling_runs_are_counted() {
    let mut text: String = (0..150)
        .map(|i| format!("   Compiling crate-{i} v0.{i}.3\n"))
        .collect();
    text.push_str("error[E0599]: no method named `frob` found for struct `Foo` in the current scope\n  --> src/main.rs:4:7\n   |\n4  |     x.frob();\n   |       ^^^^ method not found in `Foo`\n\nerror: could not compile `app` (bin \"app\") due to 1 previous error\n");
    let out = run(&text, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "[… 150 Compiling lines elided …]",
            "error[E0599]: no method named `frob` found for struct `Foo` in the current scope",
            "  --> src/main.rs:4:7",
            "4  |     x.frob();",
        ],
    );
    let log: String = (0..150)
        .map(|i| format!("   Compiling crate-{i} v0.{i}.3\n"))
        .collect::<String>()
        + "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 41.20s\n";
    let out = run(&log, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "   Compiling crate-0 v0.0.3",
            "[… 148 Compiling lines elided …]",
            "   Compiling crate-149 v0.149.3",
            "Finished `dev` profile",
        ],
    );
}

/// gcc: both errors and warnings keep their location; the code frame goes for warnings at
/// Aggressive only.
#[test]
fn gcc_diagnostics_keep_locations() {
    let out = run(GCC_ERRORS, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "bad.c:5:5: error: expected ‘,’ or ‘;’ before ‘printf’",
            "    5 |     printf(\"%d\\n\", y);",
            "bad.c:2:25: warning: unused variable ‘unused’ [-Wunused-variable]",
            "bad.c: In function ‘main’:",
        ],
    );
    let out = run(GCC_ERRORS, Level::Aggressive);
    assert_contains_all(
        &out,
        &[
            "bad.c:5:5: error: expected ‘,’ or ‘;’ before ‘printf’",
            "    5 |     printf(\"%d\\n\", y);",
            "bad.c:6:12: warning: returning ‘char *’",
            "bad.c:4:9: warning: unused variable ‘x’",
        ],
    );
    assert!(!out.contains("    6 |     return \"done\";"));
}

/// tsc: every error line with its code and position stays.
#[test]
fn tsc_errors_stay() {
    let mut text = String::new();
    for i in 0..30 {
        text.push_str(&format!(
            "src/components/Table{i}.tsx({i},5): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.\n"
        ));
    }
    text.push_str("\nFound 30 errors in 30 files.\n");
    let out = compact(&text, Level::Standard);
    // nothing to remove: every line is an error
    if let Some(out) = out {
        assert!(out.contains("src/components/Table17.tsx(17,5): error TS2345"));
        assert!(out.contains("Found 30 errors in 30 files."));
    }
}

// ---- pytest ----

/// pytest -v: passing tests are counted; failures keep the assertion introspection, the
/// failing line, `file:line:` and the summaries.
#[test]
fn pytest_keeps_failures_and_counts_passes() {
    let out = run(PYTEST_FAIL, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "[… 30 passing tests elided …]",
            "test_parser.py::test_header_width FAILED",
            "test_parser.py::test_skipped SKIPPED (not on this platform)",
            "== FAILURES ==",
            ">       assert row == expected",
            "E       AssertionError: assert ['id', 'name', 'email'] == ['id', 'name'...ail', 'phone']",
            "E         Right contains one more item: 'phone'",
            "test_parser.py:14: AssertionError",
            "E       AssertionError: timeout should default to 60",
            "E       assert 30 == 60",
            "test_parser.py:18: AssertionError",
            "E           json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            "short test summary info",
            "FAILED test_parser.py::test_config_loads - AssertionError: timeout should default to 60",
            "3 failed, 30 passed, 1 skipped in 0.08s",
        ],
    );
    assert!(!out.contains("test_parse_many[7]"));
    let aggressive = run(PYTEST_FAIL, Level::Aggressive);
    assert!(aggressive.len() < out.len());
    assert_contains_all(
        &aggressive,
        &[
            ">       assert row == expected",
            "E       assert 30 == 60",
            "test_parser.py:18: AssertionError",
            "3 failed, 30 passed, 1 skipped in 0.08s",
        ],
    );
}

/// Jest: checkmarked tests are counted, the failure block stays.
#[test]
fn jest_counts_passing_tests() {
    let mut text = String::from("FAIL src/sum.test.js\n  sum\n");
    for i in 0..40 {
        text.push_str(&format!("    ✓ adds {i} + 1 ({i} ms)\n"));
    }
    text.push_str("    ✕ handles negatives (4 ms)\n\n  ● sum › handles negatives\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: -2\n    Received: 2\n\n      at Object.<anonymous> (src/sum.test.js:9:23)\n\nTests:       1 failed, 40 passed, 41 total\n");
    let out = run(&text, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "[… 40 passing tests elided …]",
            "✕ handles negatives (4 ms)",
            "Expected: -2",
            "Received: 2",
            "at Object.<anonymous> (src/sum.test.js:9:23)",
            "Tests:       1 failed, 40 passed, 41 total",
        ],
    );
}

// ---- installs ----

/// npm: per-request log lines go, deprecations, errors and the summary stay.
#[test]
fn npm_install_keeps_warnings_and_summary() {
    let out = run(NPM_INSTALL, Level::Standard);
    assert_contains_all(
        &out,
        &["added 114 packages in 4s", "npm log lines elided …]"],
    );
    // The metadata fetch goes; the tarball's URL (package and version installed) stays.
    assert!(!out.contains("registry.npmjs.org/express 115ms"));
    assert!(out.contains("fetched https://registry.npmjs.org/express/-/express-4.22.3.tgz"));

    let failing = format!(
        "{}npm warn deprecated request@2.88.2: request has been deprecated, see https://github.com/request/request/issues/3142\nnpm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/left-padd - Not found\nnpm error A complete log of this run can be found in: /root/.npm/_logs/2024-debug-0.log\n",
        NPM_INSTALL.lines().take(60).map(|l| format!("{l}\n")).collect::<String>()
    );
    let out = run(&failing, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "npm warn deprecated request@2.88.2",
            "npm error code E404",
            "npm error 404 Not Found - GET https://registry.npmjs.org/left-padd - Not found",
        ],
    );
}

// ---- traces ----

/// Python: user frames, first and last frames and every exception line stay; library
/// frames in between are counted.
#[test]
fn python_traceback_keeps_user_frames_and_exceptions() {
    let out = run(PYTHON_TRACEBACK, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "ConnectionRefusedError: [Errno 111] Connection refused",
            "The above exception was the direct cause of the following exception:",
            "urllib3.exceptions.NewConnectionError: HTTPConnection(host='127.0.0.1', port=9)",
            "urllib3.exceptions.MaxRetryError:",
            "During handling of the above exception, another exception occurred:",
            "File \"/tmp/fx/py/fetch.py\", line 14, in <module>",
            "File \"/tmp/fx/py/fetch.py\", line 11, in main",
            "File \"/tmp/fx/py/fetch.py\", line 4, in load_config",
            "File \"/tmp/fx/py/fetch.py\", line 7, in fetch_json",
            "r = requests.get(url, timeout=0.5)",
            "File \"/tmp/pyv/lib/python3.11/site-packages/requests/adapters.py\", line 729, in send",
            "requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded with url: /config.json",
            "library frames elided (",
        ],
    );
    assert!(!out.contains("http/client.py\", line 1289"));
}

/// Python recursion: the interpreter's own repeat note stays.
#[test]
fn python_recursion_keeps_the_repeat_note() {
    let out = compact(PYTHON_RECURSION, Level::Aggressive).unwrap_or_default();
    assert!(out.contains("[Previous line repeated 996 more times]"));
    assert!(out.contains("RecursionError: maximum recursion depth exceeded"));
}

/// Node: the throwing frame, user frames and the error's properties stay.
#[test]
fn node_trace_keeps_user_frames_and_error_properties() {
    let out = run(NODE_TRACE, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "Error: ENOENT: no such file or directory, open '/nonexistent/config.json'",
            "at Object.readFileSync (node:fs:448:20)",
            "at readConfig (/tmp/fx/app.js:2:47)",
            "at Object.<anonymous> (/tmp/fx/app.js:4:1)",
            "at node:internal/main/run_main_module:28:49 {",
            "code: 'ENOENT',",
            "library frames elided (",
        ],
    );
    assert!(!out.contains("Module._compile"));
}

/// Java: user frames stay, JDK frames are counted.
#[test]
fn java_trace_keeps_user_frames() {
    let out = run(JAVA_TRACE, Level::Auto);
    assert_contains_all(
        &out,
        &[
            "Exception in thread \"main\" java.lang.NumberFormatException: For input string: \"x2\"",
            "at Main.parse(Main.java:3)",
            "at Main.main(Main.java:6)",
        ],
    );
    assert!(!out.contains("ForEachOps"));
}

// ---- listings ----

/// The lines of a grouped listing read back by hand, independently of the expanders: a
/// header `name (N<ending>` is followed by N lines, each rebuilt by `line(name, line)`.
fn ungroup(out: &str, ending: &str, line: impl Fn(&str, &str) -> String) -> Vec<String> {
    let mut rebuilt = Vec::new();
    let (mut name, mut below) = ("", 0);
    for text in out.lines() {
        if below > 0 {
            rebuilt.push(line(name, text));
            below -= 1;
        } else if let Some((n, count)) = text.strip_suffix(ending).and_then(|l| l.rsplit_once(" ("))
        {
            (name, below) = (n, count.parse().unwrap());
        } else {
            rebuilt.push(text.to_string());
        }
    }
    rebuilt
}

/// grep -rn: grouped per file, losslessly: every line number and text survives.
#[test]
fn grep_output_is_grouped_losslessly() {
    let out = run(GREP_RN, Level::Standard);
    assert!(out.len() < GREP_RN.len() * 3 / 4);
    // Rebuild the original lines from the grouped form.
    let rebuilt = ungroup(&out, " lines):", |path, line| {
        let (n, text) = line.split_once(':').unwrap();
        format!("{path}:{n}:{text}")
    });
    let original: Vec<String> = GREP_RN.lines().map(|l| l.trim_end().to_string()).collect();
    assert_eq!(rebuilt, original);
    assert_eq!(
        compact(GREP_RN, Level::Light).map(|o| o.len()),
        Some(GREP_RN.len() - 1)
    );
}

/// grep at Aggressive caps matches per file.
#[test]
fn grep_aggressive_caps_matches_per_file() {
    let text: String = (1..=60)
        .map(|i| format!("src/big.rs:{i}:    let value_{i} = compute({i});\n"))
        .collect();
    let out = run(&text, Level::Aggressive);
    assert!(out.starts_with("src/big.rs (20 lines):\n1:    let value_1 = compute(1);"));
    assert!(out.contains("[… 40 matches in this file elided …]"));
}

/// find: grouped per directory, losslessly.
#[test]
fn find_output_is_grouped_losslessly() {
    let out = run(FIND, Level::Standard);
    let rebuilt = ungroup(&out, " entries):", |dir, name| format!("{dir}{name}"));
    assert_eq!(rebuilt, FIND.lines().collect::<Vec<_>>());
}

/// ls -laR: Standard (the default) says the shared columns once and keeps every line;
/// Aggressive names only.
#[test]
fn ls_keeps_every_column_by_default_and_names_at_aggressive() {
    let out = run(LS_LAR, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "urllib3:",
            "unless given: -rw-r--r-- 1 root root Dec 1 10:33; d drwxr-xr-x]",
            "\n6979 __init__.py\n",
            "\nd 4 4096 contrib\n",
            "urllib3/contrib:",
            "total 288",
        ],
    );
    assert!(!out.contains("root root 6979"));
    assert_eq!(run(LS_LAR, Level::Auto), out);
    assert_eq!(super::expand_listings(&out).trim_end(), LS_LAR.trim_end());
    let out = run(LS_LAR, Level::Aggressive);
    assert_contains_all(&out, &["urllib3:", "\n__init__.py\n", "\ncontrib/\n"]);
    assert!(!out.contains("6979"));
    // Light leaves listings alone apart from escapes and trailing newline.
    assert_eq!(
        compact(LS_LAR, Level::Light).as_deref(),
        Some(LS_LAR.trim_end())
    );
}

// ---- git log ----

/// git log --stat: every commit line, subject and summary stays; histograms go.
#[test]
fn git_log_keeps_commits_and_drops_histograms() {
    for level in [Level::Light, Level::Standard, Level::Aggressive] {
        let out = run(GIT_LOG_STAT, level);
        for line in GIT_LOG_STAT.lines() {
            if line.starts_with("commit ")
                || line.starts_with("    ")
                || line.contains(" changed, ")
            {
                assert!(out.contains(line), "{level:?} lost {line:?}");
            }
        }
        assert!(out.contains(" gateway-core/src/proxy.rs | 34\n"));
        assert!(!out.contains("++++"));
    }
    let light = run(GIT_LOG_STAT, Level::Light);
    assert!(light.contains("\nDate:   Tue Dec 1 10:29:25 2026 +0000\n"));
    let standard = run(GIT_LOG_STAT, Level::Standard);
    assert!(standard.contains(
        "Author: Seed 64af95fb maintainers <maintainers@users.noreply.a-seed-64af95fb.example>, Date: Tue Dec 1 10:29:25 2026 +0000"
    ));
}

/// git log -p: the patch part is left exactly as it was.
#[test]
fn git_log_patches_are_untouched() {
    let mut text = String::new();
    for i in 0..20 {
        text.push_str(&format!("commit {:040x}\nAuthor: Dev <dev@example.com>\nDate:   Mon Jan 1 10:00:{i:02} 2024 +0000\n\n    Fix thing {i}\n\ndiff --git a/x.rs b/x.rs\nindex 1111111..2222222 100644\n--- a/x.rs\n+++ b/x.rs\n@@ -1,3 +1,3 @@\n fn a() {{}}\n-old | 12 ++++\n+new | 13 ----\n\n", i + 1));
    }
    let out = run(&text, Level::Standard);
    assert!(out.contains("\n-old | 12 ++++\n+new | 13 ----\n"));
    assert!(out.contains("Author: Dev <dev@example.com>, Date: Mon Jan 1 10:00:00 2024 +0000"));
    assert!(out.contains("\nAuthor and day as above, at 10:00:07\n"));
}

// ---- JSON ----

fn pretty_api_response(items: usize) -> String {
    let mut v = Vec::new();
    for i in 0..items {
        let status = if i == 37 {
            "failed: timeout talking to db"
        } else {
            "ok"
        };
        v.push(format!(
            "    {{\n      \"id\": {i},\n      \"name\": \"item-{i}\",\n      \"price\": {}.{:02},\n      \"tags\": [\"a\", \"b\"],\n      \"status\": \"{status}\",\n      \"note\": \"caf\\u00e9 \\\"quoted\\\" é\"\n    }}",
            i * 3,
            i % 100
        ));
    }
    format!(
        "{{\n  \"z_first\": true,\n  \"count\": {items},\n  \"big\": 12345678901234567890123,\n  \"items\": [\n{}\n  ]\n}}\n",
        v.join(",\n")
    )
}

/// Light minifies without changing a single value or the key order; Standard's tables
/// give that minified text back.
#[test]
fn json_is_minified_losslessly() {
    let text = pretty_api_response(40);
    for level in [Level::Light, Level::Standard, Level::Auto] {
        let out = super::expand_listings(&run(&text, level));
        let out = out.trim_end();
        let a: serde_json::Value = serde_json::from_str(&text).unwrap();
        let b: serde_json::Value = serde_json::from_str(out).unwrap();
        assert_eq!(a, b);
        assert!(out.starts_with("{\"z_first\":true,\"count\":40,\"big\":12345678901234567890123,"));
        assert!(out.contains("\"note\":\"caf\\u00e9 \\\"quoted\\\" é\""));
    }
}

/// Aggressive samples long arrays and keeps the failing item; valid JSON once its tables
/// are expanded.
#[test]
fn json_aggressive_samples_and_keeps_failures() {
    let text = pretty_api_response(100);
    let out = run(&text, Level::Aggressive);
    let v: serde_json::Value = serde_json::from_str(&super::expand_listings(&out)).unwrap();
    let items = v["items"].as_array().unwrap();
    assert!(items.len() < 20);
    assert!(out.contains("failed: timeout talking to db"));
    assert!(out.contains("\"[… 32 of 100 items elided …]\""));
    assert!(out.contains("\"[… 59 of 100 items elided …]\""));
    assert_eq!(items.last().unwrap()["id"], 99);
}

/// Numbers are copied as written, digit for digit (no float round trip).
#[test]
fn json_numbers_keep_their_exact_text() {
    let text = format!(
        "[\n  910008.7842140581,\n  1e400,\n  -0.0,\n  12345678901234567890123\n]{}",
        " ".repeat(1100)
    );
    assert_eq!(
        run(&text, Level::Standard),
        "[910008.7842140581,1e400,-0.0,12345678901234567890123]"
    );
}

/// Minified JSON cannot get shorter at Standard.
#[test]
fn minified_json_passes_unchanged() {
    let text =
        serde_json::to_string(&serde_json::json!({"a": [1, 2, 3], "b": "x".repeat(2000)})).unwrap();
    assert_eq!(compact(&text, Level::Standard), None);
}

// ---- things never rewritten ----

/// Source code — plain, or numbered as an agent's file read — passes unchanged.
#[test]
fn source_code_passes_unchanged() {
    let source = include_str!("lines.rs");
    for level in LEVELS {
        assert_eq!(compact(source, level), None, "{level:?}");
    }
    let numbered: String = source
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{:>6}→{l}\n", i + 1))
        .collect();
    for level in LEVELS {
        assert_eq!(compact(&numbered, level), None, "{level:?}");
    }
    let cat_n: String = include_str!("fixtures/../json.rs")
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
        .collect();
    assert_eq!(compact(&cat_n, Level::Aggressive), None);
}

/// Python source passes unchanged.
#[test]
fn python_source_passes_unchanged() {
    let mut source = String::from("import os\nimport sys\nfrom typing import Optional\n\n");
    for i in 0..30 {
        source.push_str(&format!(
            "class Handler{i}:\n    def __init__(self, path: str) -> None:\n        self.path = path\n\n    def run(self) -> Optional[str]:\n        if not os.path.exists(self.path):\n            return None\n        return open(self.path).read()\n\n"
        ));
    }
    assert_eq!(compact(&source, Level::Aggressive), None);
}

/// Prose passes unchanged.
#[test]
fn prose_passes_unchanged() {
    let para = "Trimgate sits between a coding agent and the model provider, and it keeps every request intact while it makes long conversations cheaper. The agent does not notice anything, because the answers come back in the same shape and with the same content as before.\n\n";
    let text = format!("# Trimgate\n\n{}", para.repeat(20));
    for level in LEVELS {
        assert_eq!(compact(&text, level), None, "{level:?}");
    }
}

/// A diff keeps every +, - and context line (trailing blanks included); Standard drops
/// only `index` lines.
#[test]
fn diffs_are_only_stripped_of_colour_and_index_lines() {
    let mut text = String::new();
    for i in 0..10 {
        text.push_str(&format!(
            "\x1b[1mdiff --git a/src/f{i}.rs b/src/f{i}.rs\x1b[m\n\x1b[1mindex 83db48f..bf269f4 100644\x1b[m\n\x1b[1m--- a/src/f{i}.rs\x1b[m\n\x1b[1m+++ b/src/f{i}.rs\x1b[m\n\x1b[36m@@ -1,4 +1,4 @@\x1b[m\n fn main() {{\x1b[m\n\x1b[31m-    let x = {i};  \x1b[m\n\x1b[32m+    let x = {};\x1b[m\n     run(x);\n }}\n",
            i + 1
        ));
    }
    let plain = super::ansi::strip(&text).into_owned();
    assert_eq!(
        compact(&text, Level::Light).as_deref(),
        Some(plain.as_str())
    );
    assert_eq!(compact(&text, Level::Auto).as_deref(), Some(plain.as_str()));
    let standard = run(&text, Level::Standard);
    assert_eq!(
        standard,
        plain.replace("index 83db48f..bf269f4 100644\n", "")
    );
    assert!(standard.contains("-    let x = 3;  \n"));
}

// ---- generic logs ----

/// A long log with a traceback in it reads as a stack trace: head, tail and every error
/// with context stay; the rest is counted.
#[test]
fn long_logs_keep_head_tail_and_errors() {
    let mut text = String::new();
    for i in 0..2000 {
        match i {
            700 => text.push_str("2024-05-01 10:11:40 ERROR db: connection reset by peer (code 104)\n"),
            1500 => text.push_str("Traceback (most recent call last):\n  File \"/srv/app/worker.py\", line 88, in run\n    job.execute()\nValueError: bad job id 'x17'\n"),
            _ => {
                let queue = ["alpha", "beta", "gamma", "delta"][i % 4];
                text.push_str(&format!("2024-05-01 10:{:02}:{:02} INFO worker: processed {queue} batch {i} with {} records\n", i / 60 % 60, i % 60, i * 7 % 13));
            }
        }
    }
    let out = run(&text, Level::Standard);
    assert_contains_all(
        &out,
        &[
            "2024-05-01 10:11:40 ERROR db: connection reset by peer (code 104)",
            "ValueError: bad job id 'x17'",
            "File \"/srv/app/worker.py\", line 88, in run",
            "processed alpha batch 0 with",
            "processed delta batch 1999 with",
            "lines elided",
        ],
    );
    // Timestamped: below Aggressive only lines that differ in timestamps and ids fold.
    assert!(run(&text, Level::Aggressive).len() * 5 < text.len());
    let light = run(&text, Level::Light);
    assert_eq!(light.lines().count(), text.lines().count());
}

/// A log of no known kind is content the compactor cannot read: by default every line of
/// it stays, the error and the 1,998 lines around it alike. Aggressive keeps its head, its
/// tail and each error with context, and counts the rest.
#[test]
fn a_long_log_of_no_known_kind_keeps_every_line_by_default() {
    let text: String = (0..2000)
        .map(|i| match i {
            700 => "2024-05-01 10:11:40 ERROR db: connection reset by peer (code 104)\n".to_owned(),
            _ => {
                let queue = ["alpha", "beta", "gamma", "delta"][i % 4];
                format!(
                    "job {:02}/{:02} INFO worker: processed {queue} batch {i}\n",
                    i / 60 % 60,
                    i % 60
                )
            }
        })
        .collect();
    assert_eq!(kind(&text), super::classify::Kind::Log);
    for level in [Level::Light, Level::Standard, Level::Auto] {
        assert_eq!(
            compact(&text, level).as_deref(),
            Some(text.trim_end()),
            "{level:?}"
        );
    }
    let out = run(&text, Level::Aggressive);
    assert_contains_all(
        &out,
        &[
            "2024-05-01 10:11:40 ERROR db: connection reset by peer (code 104)",
            "processed alpha batch 0",
            "processed delta batch 1999",
            "lines elided …]",
        ],
    );
    assert!(out.len() * 5 < text.len());
}

/// The outputs that lost their middle inside Codex's wrapper: a `git log --format='%h %s'`
/// listing (the commit asked about was among the elided lines) and an `npm ls --all` tree
/// (47 kB cut to 4 kB). Bare and in every real agent's wrapper, the default mode keeps
/// every line of them (a tree's guide bars may be blanked: the lines are read back with
/// them redrawn).
#[test]
fn git_log_format_and_npm_ls_tree_keep_every_line_by_default() {
    use corpus::{
        CLAUDE_GIT_LOG, CODEX_EXEC_GIT_LOG, CODEX_EXEC_NPM_LS, CODEX_SHELL_GIT_LOG,
        CODEX_SHELL_NPM_LS, GIT_LOG_FORMAT, NPM_LS_ALL,
    };
    /// The lines a text's output has (decoded from the JSON string when it is one), up to
    /// its last line that is not blank.
    fn output_lines(text: &str) -> Vec<String> {
        let text = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => v["output"].as_str().unwrap().to_owned(),
            Err(_) => text.to_owned(),
        };
        let text = super::expand_listings(&text);
        text.trim_end().lines().map(str::to_owned).collect()
    }
    for text in [
        GIT_LOG_FORMAT,
        NPM_LS_ALL,
        CODEX_EXEC_GIT_LOG,
        CODEX_EXEC_NPM_LS,
        CODEX_SHELL_GIT_LOG,
        CODEX_SHELL_NPM_LS,
        CLAUDE_GIT_LOG,
    ] {
        for level in [Level::Light, Level::Standard, Level::Auto] {
            let out = compact(text, level).unwrap_or_else(|| text.to_owned());
            assert_eq!(output_lines(&out), output_lines(text), "{level:?}");
        }
    }
    for level in [Level::Standard, Level::Auto] {
        for agent in AGENTS {
            for output in [GIT_LOG_FORMAT, NPM_LS_ALL] {
                let wrapped = wrap(agent, output);
                let out = compact(&wrapped, level).unwrap_or_else(|| wrapped.clone());
                let inside = super::wrapper::split(&out).unwrap();
                let inside = super::expand_listings(inside.output());
                let lost: Vec<&str> = output
                    .lines()
                    .filter(|l| !inside.lines().any(|k| k == *l))
                    .collect();
                assert!(
                    inside.lines().eq(output.trim_end().lines()),
                    "{agent:?} {level:?}: {lost:?}"
                );
            }
        }
    }
}

/// Exact repeats fold at every level with the number of occurrences.
#[test]
fn repeated_lines_fold_with_a_count() {
    let text = format!(
        "start\n{}done\n",
        "Waiting for file lock on package cache\n".repeat(50)
    );
    for level in [Level::Light, Level::Standard] {
        let out = run(&text, level);
        assert_eq!(
            out,
            "start\nWaiting for file lock on package cache\n[… line repeated 50 times …]\ndone"
        );
    }
}

/// `\r` progress redraws keep only the final state; progress lines are folded.
#[test]
fn progress_redraws_keep_the_final_state() {
    let mut text = String::new();
    for f in ["model-00001.safetensors", "model-00002.safetensors"] {
        for p in (0..=100).step_by(5) {
            text.push_str(&format!(
                "Downloading {f}: {p:>3}%|{:<20}| {}/100 [00:0{}<00:10]\r",
                "█".repeat(p / 5),
                p,
                p / 20
            ));
        }
        text.push('\n');
    }
    for p in 0..=40 {
        text.push_str(&format!(
            "Extracting [{:<40}] {}%\n",
            "=".repeat(p),
            p * 100 / 40
        ));
    }
    text.push_str("Done: 2 files extracted\n");
    let out = run(&text, Level::Auto);
    assert_contains_all(
        &out,
        &[
            "Downloading model-00001.safetensors: 100%",
            "Downloading model-00002.safetensors: 100%",
            "Extracting [========================================] 100%",
            "[… 40 progress updates elided …]",
            "Done: 2 files extracted",
        ],
    );
    assert!(!out.contains(" 55%"));
}

/// In a log of no known kind, lines differing only in numbers are facts (each its own
/// latency): the default keeps every one; Aggressive folds them.
#[test]
fn number_only_variations_of_an_unknown_log_fold_at_aggressive_only() {
    let text: String = (0..200)
        .map(|i| {
            format!(
                "[{:05}] heartbeat from node-7 latency={}ms\n",
                i,
                10 + i % 9
            )
        })
        .collect();
    let out = run(&text, Level::Aggressive);
    assert_eq!(
        out,
        "[00000] heartbeat from node-7 latency=10ms\n[… 198 lines differing only in numbers elided …]\n[00199] heartbeat from node-7 latency=11ms"
    );
    for level in [Level::Light, Level::Standard, Level::Auto] {
        assert_eq!(
            compact(&text, level).as_deref(),
            Some(text.trim_end()),
            "{level:?}"
        );
    }
}

/// A 600 KiB log compacts quickly (generous bound: debug builds are slow).
#[test]
fn large_inputs_compact_quickly() {
    let mut text = String::with_capacity(700 * 1024);
    let mut i = 0usize;
    while text.len() < 600 * 1024 {
        if i.is_multiple_of(997) {
            text.push_str(&format!(
                "\x1b[31merror\x1b[0m: job {i} failed: exit code 1\n"
            ));
        } else {
            text.push_str(&format!(
                "\x1b[32mINFO\x1b[0m step {i}: copied {} bytes to /var/cache/build/{}\r\n",
                i * 31 % 9973,
                i % 17
            ));
        }
        i += 1;
    }
    let start = std::time::Instant::now();
    let out = run(&text, Level::Standard);
    let log_time = start.elapsed();
    assert!(log_time < std::time::Duration::from_secs(5));
    assert!(out.contains("error: job 997 failed: exit code 1"));
    let json = format!(
        "[{}]",
        (0..20000)
            .map(|i| format!("{{\"i\": {i}, \"s\": \"v{i}\"}}"))
            .collect::<Vec<_>>()
            .join(",\n ")
    );
    let start = std::time::Instant::now();
    let _ = run(&json, Level::Aggressive);
    let json_time = start.elapsed();
    assert!(json_time < std::time::Duration::from_secs(5));
    println!(
        "600 KiB log: {log_time:?}; {} KiB JSON: {json_time:?}",
        json.len() / 1024
    );
}

// ---- agents' wrappers ----

/// Real outputs of the savings corpus (`bench/corpus/outputs`, see its MANIFEST).
mod corpus {
    pub const CARGO_TEST_FAILURES: &str =
        include_str!("../../../../bench/corpus/outputs/cargo-test-failures.txt");
    pub const CAT_N_ROUTING: &str =
        include_str!("../../../../bench/corpus/outputs/cat-n-routing-rs.txt");
    pub const GIT_LOG_STAT: &str =
        include_str!("../../../../bench/corpus/outputs/git-log-stat-full.txt");
    pub const NPM_INSTALL_HTTP: &str =
        include_str!("../../../../bench/corpus/outputs/npm-install-http.txt");
    pub const PYTEST_FAILURES: &str =
        include_str!("../../../../bench/corpus/outputs/pytest-failures.txt");
    pub const PYTHON_RECURSION: &str =
        include_str!("../../../../bench/corpus/outputs/python-recursionerror.txt");
    pub const CODEX_EXEC_NPM_LS: &str =
        include_str!("../../../../bench/corpus/outputs/codex-exec-npm-ls-all.txt");
    pub const CODEX_SHELL_NPM_LS: &str =
        include_str!("../../../../bench/corpus/outputs/codex-shell-npm-ls-all.txt");
    pub const CLAUDE_GIT_LOG: &str =
        include_str!("../../../../bench/corpus/outputs/claude-bash-git-log-format.txt");
    pub const GIT_LOG_FORMAT: &str =
        include_str!("../../../../bench/corpus/outputs/git-log-format.txt");
    pub const NPM_LS_ALL: &str = include_str!("../../../../bench/corpus/outputs/npm-ls-all.txt");
    pub const CODEX_EXEC_GIT_LOG: &str =
        include_str!("../../../../bench/corpus/outputs/codex-exec-git-log-format.txt");
    pub const CODEX_SHELL_GIT_LOG: &str =
        include_str!("../../../../bench/corpus/outputs/codex-shell-git-log-format.txt");
}

/// The agents' shapes, built around any output the way each agent builds them: the
/// Codex header and the Claude Code reminder are taken from the real CLIs' results.
#[derive(Clone, Copy, Debug)]
enum Agent {
    CodexHeader,
    CodexJson,
    ClaudeCodeFailed,
}

const AGENTS: [Agent; 3] = [
    Agent::CodexHeader,
    Agent::CodexJson,
    Agent::ClaudeCodeFailed,
];

fn wrap(agent: Agent, output: &str) -> String {
    match agent {
        Agent::CodexHeader => {
            let header = corpus::CODEX_EXEC_NPM_LS;
            let end = header.find("Output:\n").unwrap() + "Output:\n".len();
            format!("{}{output}", &header[..end])
        }
        Agent::CodexJson => format!(
            "{{\"output\":{},\"metadata\":{{\"exit_code\":1,\"duration_seconds\":0.4}}}}",
            serde_json::to_string(output).unwrap()
        ),
        Agent::ClaudeCodeFailed => {
            let reminder = &corpus::CLAUDE_GIT_LOG[corpus::CLAUDE_GIT_LOG
                .rfind("\n\n<system-reminder>")
                .unwrap()..];
            format!("Exit code 1\n{}{reminder}", output.trim_end_matches('\n'))
        }
    }
}

/// What kind the classifier sees in a text, as [`compact`] would.
fn kind(text: &str) -> super::classify::Kind {
    super::classify::classify(&super::ansi::tidy(&super::ansi::strip(text)))
}

/// Inside any agent's wrapper, an output is classified as it would be bare (a header
/// above `git log` would otherwise hide its first `commit` line).
#[test]
fn wrapped_outputs_are_classified_as_bare() {
    use super::classify::Kind;
    let bare = [
        (corpus::GIT_LOG_STAT, Kind::GitLog),
        (corpus::PYTEST_FAILURES, Kind::Test),
        (corpus::NPM_INSTALL_HTTP, Kind::Install),
        (corpus::PYTHON_RECURSION, Kind::Trace),
        (corpus::CAT_N_ROUTING, Kind::Code),
    ];
    for (output, expected) in bare {
        assert_eq!(kind(output), expected);
        for agent in AGENTS {
            let wrapped = wrap(agent, output);
            let inside = super::wrapper::split(&wrapped).unwrap();
            assert_eq!(kind(inside.output()), expected, "{agent:?}");
        }
    }
    assert_ne!(
        kind(&wrap(Agent::CodexHeader, corpus::GIT_LOG_STAT)),
        Kind::GitLog
    );
}

/// A wrapped output compacts to exactly what it would bare, inside the same wrapper, at
/// every level; what passes unchanged bare (source code) passes unchanged wrapped.
#[test]
fn wrapped_outputs_compact_as_they_would_bare() {
    for output in [
        corpus::CARGO_TEST_FAILURES,
        corpus::GIT_LOG_STAT,
        corpus::PYTEST_FAILURES,
        corpus::NPM_INSTALL_HTTP,
        corpus::PYTHON_RECURSION,
        corpus::CAT_N_ROUTING,
    ] {
        for agent in AGENTS {
            let wrapped = wrap(agent, output);
            for level in LEVELS {
                assert_eq!(
                    compact(&wrapped, level),
                    compact(output, level).map(|bare| wrap(agent, &bare)),
                    "{agent:?} {level:?}"
                );
            }
        }
    }
}

/// Listings rewritten reversibly (rg matches, tags, a flat npm tree, pip list), inside
/// every agent's wrapper, give back every line of the output when expanded.
#[test]
fn wrapped_listings_expand_back_line_for_line() {
    for output in [
        include_str!("fixtures/rg_plain.txt"),
        include_str!("fixtures/rg_context.txt"),
        include_str!("fixtures/git_tag.txt"),
        include_str!("fixtures/npm_ls_depth0.txt"),
        include_str!("fixtures/pip_list.txt"),
    ] {
        for agent in AGENTS {
            let out = compact(&wrap(agent, output), Level::Auto).unwrap();
            let expanded = super::expand_listings(&out);
            assert!(
                expanded.trim_end().lines().eq(output.trim_end().lines()),
                "{agent:?}:\n{out}"
            );
        }
    }
}

/// Before, a JSON-wrapped output was one JSON document already minified: nothing was
/// compacted. Its output now compacts as the bare output does, and the JSON stays valid.
#[test]
fn json_wrapped_output_compacts_where_bare_does() {
    let wrapped = wrap(Agent::CodexJson, corpus::PYTEST_FAILURES);
    let out = run(&wrapped, Level::Auto);
    assert!(out.len() * 3 < wrapped.len());
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    let inner = value["output"].as_str().unwrap();
    assert_eq!(
        Some(inner),
        compact(corpus::PYTEST_FAILURES, Level::Auto).as_deref()
    );
    assert!(inner.contains("[… 114 passing tests elided …]"), "{inner}");
    assert!(inner.contains("FAILED tests/test_pricing.py::test_summarize_categories"));
    assert_eq!(
        value["metadata"],
        serde_json::json!({"exit_code": 1, "duration_seconds": 0.4})
    );
}

/// The wrappers the real CLIs sent come back byte for byte around whatever the output
/// became, and the same input always gives the same bytes.
#[test]
fn agent_wrappers_stay_byte_for_byte_and_deterministic() {
    let header_end = corpus::CODEX_EXEC_NPM_LS.find("Output:\n").unwrap() + "Output:\n".len();
    let header = &corpus::CODEX_EXEC_NPM_LS[..header_end];
    let json_tail =
        &corpus::CODEX_SHELL_NPM_LS[corpus::CODEX_SHELL_NPM_LS.rfind(",\"metadata\":").unwrap()..];
    let reminder = &corpus::CLAUDE_GIT_LOG[corpus::CLAUDE_GIT_LOG
        .rfind("\n\n<system-reminder>")
        .unwrap()..];
    for level in LEVELS {
        for (text, starts, ends) in [
            (corpus::CODEX_EXEC_NPM_LS, header, ""),
            (
                corpus::CODEX_SHELL_NPM_LS,
                "{\"output\":\"Total output lines: 872\\n\\n",
                json_tail,
            ),
            (corpus::CLAUDE_GIT_LOG, "", reminder),
        ] {
            let Some(out) = compact(text, level) else {
                continue;
            };
            assert!(
                out.starts_with(starts) && out.ends_with(ends),
                "{level:?}:\n{out}"
            );
            assert_eq!(
                compact(text, level),
                Some(out),
                "{level:?} not deterministic"
            );
        }
    }
}

// ---- properties ----

/// Log-like lines: ANSI colours, `\r` redraws, repeats, cargo/pytest/grep shapes.
fn log_line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,30}",
        "\\x1b\\[[0-9;]{0,6}m[a-zA-Z: ]{0,20}\\x1b\\[0m",
        "[a-z]{1,8} [0-9]{1,3}%\\r[a-z]{1,8} 100%",
        "   Compiling [a-z]{1,6} v[0-9]\\.[0-9]\\.[0-9]",
        "test [a-z:_]{1,12} \\.\\.\\. (ok|FAILED)",
        "[a-z/]{1,10}\\.rs:[0-9]{1,3}:[ -~]{0,20}",
        "(error|warning)(\\[E[0-9]{4}\\])?: [a-z ]{0,20}",
        "  File \"/usr/lib/python3/[a-z]{1,5}\\.py\", line [0-9]{1,3}, in [a-z]{1,5}",
        "    at [a-zA-Z.]{1,12} \\((node:internal/[a-z]{1,5}|/app/[a-z]{1,4}\\.js):[0-9]{1,2}:[0-9]\\)",
        "Traceback \\(most recent call last\\):",
        "stack backtrace:",
        "  [0-9]{1,2}: (std|core|app)::[a-z]{1,6}",
        "commit [0-9a-f]{40}",
        " [a-z/]{1,10} \\| [0-9]{1,2} \\+*-*",
        "-rw-r--r-- 1 u g [0-9]{1,5} Jan  1 10:00 [a-z]{1,8}",
        "[=_]{6} [A-Z ]{1,10} [=_]{6}",
        "[ -~é…\\t\\r]{0,40}",
    ]
}

fn log_text() -> impl Strategy<Value = String> {
    proptest::collection::vec((log_line(), 1usize..4), 0..80).prop_map(|lines| {
        let mut text = String::new();
        for (line, times) in lines {
            for _ in 0..times {
                text.push_str(&line);
                text.push('\n');
            }
        }
        text
    })
}

/// Any JSON value, built from arbitrary leaves, pretty-printed by serde_json.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        (-1e6f64..1e6).prop_map(serde_json::Value::from),
        "[ -~é\\n\"\\\\]{0,12}".prop_map(serde_json::Value::from),
        Just(serde_json::Value::from("error: disk full")),
    ];
    leaf.prop_recursive(4, 200, 40, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..40).prop_map(serde_json::Value::from),
            proptest::collection::vec(("[a-z]{1,6}", inner), 0..8)
                .prop_map(|kv| { serde_json::Value::Object(kv.into_iter().collect()) }),
        ]
    })
}

proptest! {
    // failures are reported, not saved outside this folder
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Never panics, is deterministic, never grows, never leaves an escape behind.
    #[test]
    fn arbitrary_text_is_safe(text in "\\PC{0,400}", level in 0usize..4) {
        let level = LEVELS[level];
        let out = compact(&text, level);
        prop_assert_eq!(&out, &compact(&text, level));
        if let Some(out) = out {
            prop_assert!(out.len() < text.len());
        }
    }

    /// The same over generated logs with colours, redraws and repeats.
    #[test]
    fn generated_logs_are_safe(text in log_text(), level in 0usize..4) {
        let level = LEVELS[level];
        let out = compact(&text, level);
        prop_assert_eq!(&out, &compact(&text, level));
        if let Some(out) = out {
            prop_assert!(out.len() < text.len());
            prop_assert!(!out.contains('\x1b'));
        }
    }

    /// In output of no known kind, the default mode cuts no line: every line that is not
    /// a progress update is still there, whatever folded around it.
    #[test]
    fn unknown_logs_lose_no_line_by_default(text in log_text(), level in 0usize..3) {
        let level = [Level::Light, Level::Standard, Level::Auto][level];
        let tidy = super::ansi::tidy(&super::ansi::strip(&text));
        if kind(&text) == super::classify::Kind::Log {
            let out = compact(&text, level).unwrap_or_else(|| tidy.clone());
            let kept: std::collections::HashSet<&str> = out.lines().collect();
            for line in tidy.lines() {
                if !super::lines::is_progress(line) && !line.trim().is_empty() {
                    prop_assert!(kept.contains(line), "{line:?} lost from:\n{out}");
                }
            }
        }
    }

    /// JSON stays valid JSON (once its tables are expanded); at Light and Standard it is
    /// the same value.
    #[test]
    fn json_stays_json(value in json_value(), level in 0usize..4) {
        let level = LEVELS[level];
        let text = serde_json::to_string_pretty(&value).unwrap();
        if let Some(out) = compact(&text, level) {
            prop_assert!(out.len() < text.len());
            let back: serde_json::Value = serde_json::from_str(&super::expand_listings(&out)).unwrap();
            if level != Level::Aggressive {
                // compare parsed with parsed: serde_json's float parsing is not exact
                let original: serde_json::Value = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(back, original);
            }
        }
    }
}
