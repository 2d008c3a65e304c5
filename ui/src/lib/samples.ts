/** Sample tool outputs for the preview on the Models & modes page: what agents really see. */

export interface Sample {
  id: string;
  label: string;
  text: string;
}

const CRATES = ['config', 'router', 'relay', 'ledger', 'optimize', 'cache', 'secrets', 'translate'];
const CASES = [
  'parses_minimal_file',
  'rejects_unknown_keys',
  'reports_every_problem_with_its_path',
  'alias_maps_model_name',
  'glob_route_matches_family',
  'falls_back_to_default_provider',
  'streams_frames_as_they_arrive',
  'strips_usage_chunk_client_did_not_ask_for',
  'records_failed_request',
  'batches_rows_off_the_hot_path',
  'same_block_gives_same_bytes',
  'keeps_error_lines_of_long_log',
];

function cargoTestLog(): string {
  const lines: string[] = [
    '   Compiling gateway-core v0.1.0 (/home/dev/trimgate/gateway-core)',
    '   Compiling trimgate v0.1.0 (/home/dev/trimgate)',
    '    Finished `test` profile [unoptimized + debuginfo] target(s) in 41.87s',
    '     Running unittests src/lib.rs (target/debug/deps/gateway_core-5f0c1e9a2b7d4c31)',
    '',
    `running ${CRATES.length * CASES.length} tests`,
  ];
  for (const c of CRATES) {
    for (const t of CASES) {
      const failed = c === 'relay' && t === 'strips_usage_chunk_client_did_not_ask_for';
      lines.push(`test ${c}::tests::${t} ... ${failed ? 'FAILED' : 'ok'}`);
    }
  }
  lines.push(
    '',
    'failures:',
    '',
    '---- relay::tests::strips_usage_chunk_client_did_not_ask_for stdout ----',
    "thread 'relay::tests::strips_usage_chunk_client_did_not_ask_for' panicked at gateway-core/src/relay.rs:412:9:",
    'assertion `left == right` failed: the client got the usage chunk it did not ask for',
    '  left: 4',
    ' right: 3',
    'stack backtrace:',
    '   0: rust_begin_unwind',
    '             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/std/src/panicking.rs:665:5',
    '   1: core::panicking::panic_fmt',
    '             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/panicking.rs:76:14',
    '   2: core::panicking::assert_failed_inner',
    '   3: core::panicking::assert_failed',
    '             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/panicking.rs:373:5',
    '   4: gateway_core::relay::tests::strips_usage_chunk_client_did_not_ask_for',
    '             at ./src/relay.rs:412:9',
    '   5: gateway_core::relay::tests::strips_usage_chunk_client_did_not_ask_for::{{closure}}',
    '             at ./src/relay.rs:398:51',
    '   6: core::ops::function::FnOnce::call_once',
    '             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/ops/function.rs:250:5',
    'note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.',
    '',
    '',
    'failures:',
    '    relay::tests::strips_usage_chunk_client_did_not_ask_for',
    '',
    `test result: FAILED. ${CRATES.length * CASES.length - 1} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 2.31s`,
    '',
    "error: test failed, to rerun pass `-p gateway-core --lib`",
  );
  return lines.join('\n');
}

const DEPRECATED: [string, string][] = [
  ['inflight@1.0.6', 'This module is not supported, and leaks memory. Do not use it. Check out lru-cache if you want a good and tested way to coalesce async requests by a key value, which is much more comprehensive and powerful.'],
  ['rimraf@3.0.2', 'Rimraf versions prior to v4 are no longer supported'],
  ['glob@7.2.3', 'Glob versions prior to v9 are no longer supported'],
  ['@humanwhocodes/config-array@0.13.0', 'Use @eslint/config-array instead'],
  ['@humanwhocodes/object-schema@2.0.3', 'Use @eslint/object-schema instead'],
  ['eslint@8.57.1', 'This version is no longer supported. Please see https://eslint.org/version-support for other options.'],
  ['domexception@4.0.0', 'Use your platform\'s native DOMException instead'],
  ['abab@2.0.6', 'Use your platform\'s native atob() and btoa() methods instead'],
];

function npmInstallLog(): string {
  const lines: string[] = [];
  for (const [pkg, why] of DEPRECATED) lines.push(`npm warn deprecated ${pkg}: ${why}`);
  for (let i = 0; i < 24; i++) {
    lines.push(`npm http fetch GET 200 https://registry.npmjs.org/@babel%2fcore ${40 + ((i * 37) % 90)}ms (cache revalidated)`);
  }
  for (let i = 1; i <= 18; i++) {
    const done = Math.min(100, i * 6);
    lines.push(`\u001b[2K\r[${'#'.repeat(Math.round(done / 5)).padEnd(20, '.')}] \\ reify:@esbuild/linux-x64: timing reifyNode:node_modules/@esbuild/linux-x64 Completed in ${i * 113}ms`);
  }
  lines.push(
    'npm warn ERESOLVE overriding peer dependency',
    'npm warn While resolving: eslint-plugin-svelte@2.46.1',
    'npm warn Found: svelte@5.19.0',
    'npm warn node_modules/svelte',
    'npm warn   dev svelte@"^5.19.0" from the root project',
    '',
    'added 412 packages, and audited 413 packages in 18s',
    '',
    '97 packages are looking for funding',
    '  run `npm fund` for details',
    '',
    '3 vulnerabilities (1 moderate, 2 high)',
    '',
    'To address all issues, run:',
    '  npm audit fix',
    '',
    'Run `npm audit` for details.',
  );
  return lines.join('\n');
}

function grepLog(): string {
  const files = [
    'gateway-core/src/relay.rs',
    'gateway-core/src/translate/stream.rs',
    'gateway-core/src/translate/openai_chat.rs',
    'gateway-core/src/ledger/mod.rs',
    'tests/streaming.rs',
  ];
  const lines: string[] = [];
  let n = 17;
  for (const f of files) {
    for (let i = 0; i < 9; i++) {
      n = (n * 31 + 7) % 900;
      lines.push(`${f}:${n + 10}:        let usage = frame.usage.as_ref().map(|u| u.include_usage); // stream_options.include_usage`);
    }
  }
  return lines.join('\n');
}

export const SAMPLES: readonly Sample[] = [
  { id: 'cargo', label: 'cargo test with one failure', text: cargoTestLog() },
  { id: 'npm', label: 'npm install log', text: npmInstallLog() },
  { id: 'grep', label: 'grep -rn across a repository', text: grepLog() },
];
