// Starting the processes the end-to-end test drives: the gateway binary (`trimgate mock`,
// `trimgate serve`) or the dev stand-in, each read from its stdout until it says where it
// listens, and stopped by its own pid.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const uiDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** `$TRIMGATE_BIN`, else cargo's output: `$CARGO_TARGET_DIR/debug/trimgate` or `../target/debug/trimgate`. */
export function trimgateBin() {
  if (process.env.TRIMGATE_BIN) return resolve(uiDir, process.env.TRIMGATE_BIN);
  const target = process.env.CARGO_TARGET_DIR ? resolve(process.env.CARGO_TARGET_DIR) : join(uiDir, '..', 'target');
  return join(target, 'debug', 'trimgate');
}

export function assertExecutable(path) {
  if (!existsSync(path)) {
    throw new Error(`no trimgate binary at ${path}: build it with \`cargo build\` or set TRIMGATE_BIN`);
  }
}

/**
 * Spawns `cmd args` and resolves with `{ child, match, output }` once a stdout line matches
 * `pattern`; rejects if the process exits first or `timeoutMs` passes, with what it printed.
 */
export function startUntil(cmd, args, { env, pattern, timeoutMs = 30_000, name = cmd }) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let done = false;
    const fail = (why) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stop(child);
      reject(new Error(`${name}: ${why}\n--- stdout ---\n${out}\n--- stderr ---\n${err}`));
    };
    const timer = setTimeout(() => fail(`did not print a line matching ${pattern} within ${timeoutMs} ms`), timeoutMs);
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = pattern.exec(out);
      if (m && !done) {
        done = true;
        clearTimeout(timer);
        resolvePromise({ child, match: m, output: () => ({ stdout: out, stderr: err }) });
      }
    });
    child.stderr.on('data', (chunk) => {
      err += chunk;
      if (process.env.E2E_VERBOSE) process.stderr.write(`[${name}] ${chunk}`);
    });
    child.on('error', (e) => fail(`cannot start: ${e.message}`));
    child.on('exit', (code, signal) => fail(`exited (${signal ?? code}) before it was ready`));
  });
}

/** Stops one child we started: SIGTERM, then SIGKILL if it lingers. */
export function stop(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((res) => {
    const t = setTimeout(() => {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }, 5000);
    child.once('exit', () => {
      clearTimeout(t);
      res();
    });
    try {
      child.kill('SIGTERM');
    } catch {
      clearTimeout(t);
      res();
    }
  });
}

export const UI_DIR = uiDir;
