// End-to-end: the built window in real Chromium against the real `trimgate serve`, with
// `trimgate mock` as the provider and the official `openai` SDK as the agent.
//
// A first-time user opens the link the server prints, sees the first-run state, adds a
// provider pointing at the mock with its key, tests the connection, sets modes, previews a
// tool output, and then watches the feed and charts change as SDK requests (one with a
// large tool result) go through the gateway, and maps Claude Code's model slots to the
// models of two providers. It signs a tab in with a key typed into the window and out
// again, and makes a virtual key with a daily budget and its own guard mode (its key shown
// once), then revokes it. On the Guard page it sees a request's secret counted by kind and
// listed (never shown), opens that request, and switches the mode to block and back. On
// the Routes page it adds two routes, asks which one a model takes while typing and
// reordering (dragged, and from the keyboard), sees a glob that does not compile refused
// beside its field, and saves. It imports the three sample files of tests/fixtures/import
// (CC Switch, claude-code-router, LiteLLM) through the Providers page, and a malformed one.
// A screenshot of every step goes to test-results/.
//
// Env: TRIMGATE_BIN (default ../target/debug/trimgate, or $CARGO_TARGET_DIR/debug/trimgate),
// CHROMIUM (default /usr/bin/chromium), E2E_GATEWAY=fake to drive dev/fake-gateway.mjs
// instead of the binary (no mock then), E2E_VERBOSE=1 to see the processes' stderr.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { chromium } from 'playwright-core';
import { UI_DIR, assertExecutable, startUntil, stop, trimgateBin } from './processes.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'];
const FAKE = process.env.E2E_GATEWAY === 'fake';
const SHOTS = join(UI_DIR, 'test-results');
const MOCK_KEY = 'sk-mock-openai';
const MODEL = 'gpt-5-mini';
/** The real agents, pinned in tests/agents (run.sh installs them). */
const AGENTS_BIN = join(UI_DIR, '..', 'tests', 'agents', 'node_modules', '.bin');

/** A `cargo test` run of `n` tests with one failure: what an agent's tool result often is. */
function bigCargoLog(n) {
  const lines = ['   Compiling trimgate v0.1.0 (/home/dev/trimgate)', '    Finished `test` profile [unoptimized + debuginfo] target(s) in 38.02s', '     Running unittests src/lib.rs (target/debug/deps/gateway_core-5f0c1e9a2b7d4c31)', '', `running ${n} tests`];
  for (let i = 0; i < n; i++) {
    const failed = i === 211;
    lines.push(`test module_${Math.floor(i / 20)}::tests::case_${String(i).padStart(3, '0')}_keeps_the_bytes_it_did_not_change ... ${failed ? 'FAILED' : 'ok'}`);
  }
  lines.push(
    '',
    'failures:',
    '',
    '---- module_10::tests::case_211_keeps_the_bytes_it_did_not_change stdout ----',
    "thread 'module_10::tests::case_211_keeps_the_bytes_it_did_not_change' panicked at src/module_10.rs:88:9:",
    'assertion `left == right` failed',
    '  left: 41',
    ' right: 40',
    '',
    'failures:',
    '    module_10::tests::case_211_keeps_the_bytes_it_did_not_change',
    '',
    `test result: FAILED. ${n - 1} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.92s`,
  );
  return lines.join('\n');
}

function toolRequest(model, n) {
  return {
    model,
    temperature: 0,
    messages: [
      { role: 'system', content: 'You are a coding agent working in a Rust repository.' },
      { role: 'user', content: 'Run the tests and tell me what fails.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"cmd":"cargo test"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: bigCargoLog(n) },
    ],
    tools: [{ type: 'function', function: { name: 'shell', description: 'Run a shell command', parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] } } }],
  };
}

/** Polls `fn` until it returns a truthy value, or throws with `what` after `ms`. */
async function until(what, fn, ms = 15_000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function textOf(locator) {
  return ((await locator.textContent({ timeout: 5000 })) ?? '').trim();
}

/** "12.3k" → 12300, "950" → 950. */
function parseTokens(s) {
  const m = /^(-?[\d.]+)([kMB]?)$/.exec(s.replace(/,/g, ''));
  if (!m) return NaN;
  return Number(m[1]) * { '': 1, k: 1e3, M: 1e6, B: 1e9 }[m[2]];
}

describe('the window against the real gateway', () => {
  let tmp;
  let mock;
  let gateway;
  let browser;
  let page;
  let windowUrl;
  let origin;
  let mockUrl;
  let shot = 0;
  const consoleErrors = [];

  /** Goes to a page through the main navigation, as a user would. */
  async function nav(name) {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
  }

  /** The admin API called directly, with the window's token: what a test sets up behind the window's back. */
  async function admin(method, path, body) {
    const token = new URL(windowUrl).hash.replace(/^#token=/, '');
    const res = await fetch(`${origin}/admin/api${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  async function screenshot(name) {
    shot += 1;
    await page.screenshot({ path: join(SHOTS, `${String(shot).padStart(2, '0')}-${name}.png`), fullPage: true });
  }

  before(async () => {
    await rm(SHOTS, { recursive: true, force: true });
    await mkdir(SHOTS, { recursive: true });
    tmp = await mkdtemp(join(tmpdir(), 'trimgate-ui-e2e-'));
    const env = { ...process.env };
    for (const k of Object.keys(env)) {
      if (/^(OPENAI|ANTHROPIC|DEEPSEEK)_API_KEY$|^TRIMGATE_|^OTEL_/.test(k)) delete env[k];
    }
    env.XDG_DATA_HOME = join(tmp, 'data');
    env.XDG_CONFIG_HOME = join(tmp, 'config');
    env.XDG_STATE_HOME = join(tmp, 'state');
    env.TRIMGATE_LOG = process.env.E2E_VERBOSE ? 'info' : 'warn';
    // The token is in the printed link on a terminal; otherwise (as here, stdout a pipe)
    // in a private file whose path is printed.
    const windowLine = /Window:\s+(http:\/\/\S+\/ui\/)(?:#token=([0-9A-Za-z]+)| \(admin token in (\S+)\))/;

    if (FAKE) {
      mockUrl = 'http://127.0.0.1:9';
      gateway = await startUntil(process.execPath, [join(UI_DIR, 'dev', 'fake-gateway.mjs')], { env, pattern: windowLine, name: 'fake gateway' });
    } else {
      const bin = trimgateBin();
      assertExecutable(bin);
      mock = await startUntil(bin, ['mock', '--listen', '127.0.0.1:0'], { env, pattern: /listening on (http:\/\/\S+)/, name: 'trimgate mock' });
      mockUrl = mock.match[1];
      const config = join(tmp, 'trimgate.toml');
      // One failed request takes a provider out of rotation, for long enough to be seen.
      // The ledger (savings, virtual keys) in the scratch dir.
      await writeFile(
        config,
        `[server]\nlisten = "127.0.0.1:0"\n\n[retry]\ncooldown_failures = 1\ncooldown_secs = 600\n\n[ledger]\nurl = "sqlite://${join(tmp, 'ledger.sqlite')}"\n`,
      );
      gateway = await startUntil(bin, ['serve', '--config', config], { env, pattern: windowLine, name: 'trimgate serve' });
    }
    const token = gateway.match[2] ?? (await readFile(gateway.match[3], 'utf8')).trim();
    windowUrl = `${gateway.match[1]}#token=${token}`;
    origin = new URL(windowUrl).origin;

    // The browser needs no session bus (the gateway's keychain does); without it Chromium
    // leaves the desktop portals alone.
    const browserEnv = { ...process.env };
    delete browserEnv.DBUS_SESSION_BUS_ADDRESS;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, env: browserEnv });
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: 'light' });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
  });

  after(async () => {
    await browser?.close();
    await stop(gateway?.child);
    await stop(mock?.child);
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('asks for the printed link when opened without a valid token', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 700 } });
    const p = await ctx.newPage();
    for (const url of [`${origin}/ui/`, `${origin}/ui/#token=${'0'.repeat(64)}`]) {
      await p.goto(url);
      await p.getByRole('heading', { name: 'Open the link printed by trimgate serve' }).waitFor();
    }
    await p.screenshot({ path: join(SHOTS, '00-no-token.png'), fullPage: true });
    await ctx.close();
  });

  it('signs a tab in with a key typed into the window, for that tab only, and out again', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 700 } });
    const p = await ctx.newPage();
    const stored = () => p.evaluate((k) => sessionStorage.getItem(k), 'trimgate.admin_token');
    await p.goto(`${origin}/ui/#/settings`);
    const field = p.getByLabel('Admin key', { exact: true });
    await field.fill('not-the-admin-key');
    await p.getByRole('button', { name: 'Sign in', exact: true }).click();
    await p.getByText('That admin key was refused.').waitFor();
    assert.equal(await stored(), null, 'a refused key is not kept');

    // On loopback the gateway takes its per-launch token as the bearer: typed in here, it
    // signs the tab in as the server's admin key does beyond loopback.
    const token = new URL(windowUrl).hash.replace(/^#token=/, '');
    await field.fill(token);
    await p.getByRole('button', { name: 'Sign in', exact: true }).click();
    await p.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    assert.equal(await stored(), token);
    assert.equal(await p.evaluate(() => localStorage.length), 0, 'nothing in localStorage');
    assert.ok(!p.url().includes(token), `key in the URL: ${p.url()}`);
    await p.reload();
    await p.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    await p.screenshot({ path: join(SHOTS, '00-signed-in.png'), fullPage: true });

    await p.getByRole('button', { name: 'Sign out', exact: true }).click();
    await p.getByLabel('Admin key', { exact: true }).waitFor();
    assert.equal(await stored(), null, 'signing out forgets the key');
    await p.reload();
    await p.getByRole('heading', { name: 'Open the link printed by trimgate serve' }).waitFor();
    await ctx.close();
  });

  it('shows the first-run call to action and drops the token from the address bar', async () => {
    await page.goto(windowUrl);
    await page.getByRole('heading', { name: 'Add your first provider' }).waitFor();
    assert.ok(!page.url().includes('token='), `token left in the URL: ${page.url()}`);
    assert.equal(await page.getByRole('link', { name: 'Add a provider' }).count(), 1);
    await screenshot('first-run');
  });

  it('adds a provider pointing at the mock, with its key shown only as a mask', async () => {
    await page.getByRole('link', { name: 'Add a provider' }).click();
    await page.getByRole('heading', { name: 'Add your first provider' }).waitFor();

    // A missing base URL for an OpenAI-compatible server is caught next to its field.
    await page.getByLabel('Name', { exact: true }).fill('mock');
    await page.getByLabel('Kind', { exact: true }).selectOption('openai_compatible');
    await page.getByRole('button', { name: 'Add provider', exact: true }).click();
    await until('the base URL problem', async () => (await textOf(page.locator('#p-base-err'))).includes('needs its base URL'));

    await page.getByLabel('Kind', { exact: true }).selectOption('openai');
    await page.getByLabel('Base URL', { exact: true }).fill(`${mockUrl}/v1`);
    await page.getByLabel('Models', { exact: true }).fill(`${MODEL}, gpt-5`);
    await page.getByLabel('API key', { exact: true }).fill(MOCK_KEY);
    await screenshot('add-provider-form');
    await page.getByRole('button', { name: 'Add provider', exact: true }).click();

    const card = page.getByRole('article', { name: 'mock' });
    await card.waitFor();
    const key = await until('the key mask', async () => {
      const t = await textOf(card.getByTestId('key-status'));
      return t.includes('…') && t;
    });
    assert.match(key, /sk-…enai/);
    const html = await page.content();
    assert.ok(!html.includes(MOCK_KEY), 'the full key must not be in the page');
    await screenshot('provider-added');
  });

  it('tests the connection to the mock', async () => {
    const card = page.getByRole('article', { name: 'mock' });
    await card.getByRole('button', { name: 'Test connection' }).click();
    await card.getByText('Connection OK').waitFor({ timeout: 15_000 });
    await screenshot('test-connection');
  });

  it('edits the models a provider lists', async () => {
    const card = page.getByRole('article', { name: 'mock' });
    await card.getByRole('button', { name: 'Edit', exact: true }).click();
    await card.getByLabel('Models', { exact: true }).fill(`${MODEL}, gpt-5, gpt-5-nano`);
    await card.getByRole('button', { name: 'Save changes' }).click();
    await card.getByText(`${MODEL}, gpt-5, gpt-5-nano`).waitFor();
    if (!FAKE) {
      const models = await new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'sk-trimgate', maxRetries: 0 }).models.list();
      assert.ok(models.data.some((m) => m.id === 'gpt-5-nano'), 'GET /v1/models lists the edited models');
    }
  });

  it('shows the lines to paste while there is no traffic', async () => {
    await nav('Overview');
    await page.getByRole('heading', { name: 'No requests yet' }).waitFor({ timeout: 15_000 });
    const listen = new URL(origin).host;
    await page.getByLabel('Claude Code setup', { exact: true }).getByText(`ANTHROPIC_BASE_URL=http://${listen}`).waitFor();
    // The first-request lines name a model of the provider just added.
    const claudeLine = await textOf(page.getByRole('figure', { name: 'Claude Code, first request' }));
    assert.match(claudeLine, new RegExp(`^ANTHROPIC_BASE_URL=http://${listen} .*claude -p --model mock/${MODEL} 'Say hello\\.'$`));
    assert.match(await textOf(page.getByRole('figure', { name: 'Codex CLI, first request' })), new RegExp(`codex exec -m mock/${MODEL} `));
    await screenshot('no-traffic');

    if (!FAKE) {
      // The line run as a user would paste it, by the real Claude Code (a user with an API
      // key of their own; the gateway puts the provider's in): the first request arrives.
      const home = await mkdtemp(join(tmpdir(), 'trimgate-first-claude-'));
      // The mock calls the first tool a request declares unless told otherwise: a plain
      // answer is what a first "Say hello." gets from a real model.
      const env = { PATH: `${AGENTS_BIN}:${process.env.PATH}`, HOME: home, ANTHROPIC_API_KEY: 'sk-trimgate', ANTHROPIC_CUSTOM_HEADERS: 'x-mock-tool: none', DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };
      const out = spawnSync('bash', ['-c', claudeLine], { env, cwd: home, encoding: 'utf8', timeout: 180_000, stdio: ['ignore', 'pipe', 'pipe'] });
      await rm(home, { recursive: true, force: true });
      assert.equal(out.status, 0, `${claudeLine}\n${out.stderr}${out.stdout}`);
      assert.ok(out.stdout.trim().length > 0, 'Claude Code printed the answer');
      const feed = page.getByRole('table', { name: 'Recent requests' });
      await until('the first request in the feed', async () => (await feed.locator('tbody tr').count()) >= 1, 15_000);
      assert.match(await textOf(feed.locator('tbody tr').last()), new RegExp(`mock/${MODEL}`));
      await screenshot('first-request');
    }

    await nav('Agents');
    await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
    await page.getByText(`OPENAI_BASE_URL=http://${listen}/v1`).first().waitFor();
    await page.getByText('trimgate wrap claude').first().waitFor();
    assert.equal(await page.getByRole('button', { name: /^Copy / }).count() >= 5, true);
    await screenshot('agents');
  });

  it('sets modes per model, and they persist', async () => {
    await nav('Models & modes');
    await page.getByLabel('Tool output', { exact: true }).waitFor();
    await page.getByLabel('Tool output', { exact: true }).selectOption('standard');
    await page.getByRole('button', { name: 'Add rule' }).click();
    // The gateway validates the whole config; its problem shows beside the rule it is about.
    await page.getByRole('button', { name: 'Save modes' }).click();
    const rules = page.getByRole('table', { name: 'Per-model rules' });
    await rules.locator('.field-error').first().waitFor({ timeout: 10_000 });
    assert.equal(await page.getByLabel('Rule 1 model glob').getAttribute('aria-invalid'), 'true');
    await screenshot('modes-problem');
    await page.getByLabel('Rule 1 model glob').fill('gpt-5*');
    await page.getByLabel('Rule 1 Tool output').selectOption('aggressive');
    await page.getByRole('button', { name: 'Save modes' }).click();
    await page.getByText('Saved. New requests use these modes.').waitFor();

    await nav('Overview');
    await nav('Models & modes');
    await until('the saved rule', async () => (await page.getByLabel('Rule 1 model glob').inputValue()) === 'gpt-5*');
    assert.equal(await page.getByLabel('Rule 1 Tool output').inputValue(), 'aggressive');
    assert.equal(await page.getByLabel('Tool output', { exact: true }).inputValue(), 'standard');
    await screenshot('modes');
  });

  it('previews what a sample tool output becomes', async () => {
    await page.getByLabel('Sample').selectOption('cargo');
    await page.getByLabel('Tool output mode').selectOption('standard');
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    await page.getByTestId('tokens-after').waitFor({ timeout: 15_000 });
    const before = Number((await textOf(page.getByTestId('tokens-before'))).replace(/,/g, ''));
    const afterN = Number((await textOf(page.getByTestId('tokens-after'))).replace(/,/g, ''));
    assert.ok(before > 0 && afterN < before, `preview should shrink the cargo log: ${before} → ${afterN}`);
    const output = await page.getByLabel('What the provider gets').inputValue();
    assert.match(output, /FAILED/);
    await page.getByLabel('What the provider gets').scrollIntoViewIfNeeded();
    await screenshot('preview');
  });

  it('pauses and resumes optimizing', async () => {
    const toggle = page.getByRole('switch', { name: 'Optimize requests' });
    assert.equal(await toggle.getAttribute('aria-checked'), 'true');
    await toggle.click();
    await until('paused', async () => (await toggle.getAttribute('aria-checked')) === 'false');
    await page.getByText('Paused: every request passes unchanged').waitFor();
    await screenshot('paused');
    await toggle.click();
    await until('resumed', async () => (await toggle.getAttribute('aria-checked')) === 'true');
  });

  it('shows SDK traffic in the feed and the charts', async () => {
    await nav('Overview');
    if (FAKE) await page.getByRole('heading', { name: 'No requests yet' }).waitFor({ timeout: 15_000 });

    const client = new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'sk-trimgate', maxRetries: 0, timeout: 20_000 });
    const plain = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Say hello.' }] });
    assert.ok(plain.choices[0].message, 'a plain request is answered');
    const { data, response } = await client.chat.completions.create(toolRequest(MODEL, 300)).withResponse();
    assert.ok(data.choices.length > 0);
    const savedHeader = Number(response.headers.get('x-trimgate-saved-tokens') ?? '0');
    if (!FAKE) assert.ok(savedHeader > 0, `the large tool result should be compacted (x-trimgate-saved-tokens: ${savedHeader})`);

    // The empty state gives way to the feed and the charts.
    const feed = page.getByRole('table', { name: 'Recent requests' });
    await until('two rows in the feed', async () => (await feed.locator('tbody tr').count()) >= 2, 10_000);
    const firstRow = await textOf(feed.locator('tbody tr').first());
    assert.match(firstRow, new RegExp(MODEL));
    assert.match(firstRow, /mock/);
    assert.match(firstRow, /tool_output=/);
    assert.equal(await feed.locator('tbody tr').first().locator('td .good').first().textContent(), '200');
    const saved = await until('saved tokens in the headline', async () => {
      const n = parseTokens(await textOf(page.getByTestId('saved-tokens')));
      return n > 0 && n;
    }, 20_000);
    const chart = page.getByRole('img', { name: /^Tokens per hour/ });
    const chartBefore = await chart.getAttribute('aria-label');
    assert.doesNotMatch(chartBefore, / 0 saved$/);
    await page.getByRole('list', { name: 'Tokens saved by model' }).getByText(MODEL).waitFor({ timeout: 20_000 });
    await page.getByRole('list', { name: 'Tokens saved by pass' }).getByText('tool_output').waitFor({ timeout: 20_000 });
    await screenshot('overview-with-traffic');

    // More traffic: a larger tool result, and the first one again (deterministic, so the
    // response cache can answer it).
    await client.chat.completions.create(toolRequest(MODEL, 600));
    await client.chat.completions.create(toolRequest(MODEL, 300));
    await until('four rows in the feed', async () => (await feed.locator('tbody tr').count()) >= 4, 10_000);
    await until('the chart to change', async () => (await chart.getAttribute('aria-label')) !== chartBefore, 20_000);
    await until('more saved tokens', async () => parseTokens(await textOf(page.getByTestId('saved-tokens'))) > saved, 20_000);
    if (!FAKE) {
      assert.match(await textOf(feed.locator('tbody tr').first()), /hit/);
      await until('a response cache hit rate', async () => (await textOf(page.getByTestId('cache-hit-rate'))) !== '0%', 20_000);
      // Every request was answered: no error, none left by its client.
      assert.equal(await textOf(page.getByTestId('error-rate')), '0%');
    }
    await screenshot('overview-more-traffic');

    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForTimeout(300);
    await screenshot('overview-dark');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('opens a request from the feed: timing, passes, the rewritten block beside its original, both bodies when kept', { skip: FAKE && 'the stand-in keeps no bodies or blocks' }, async () => {
    await nav('Requests');
    const keep = page.getByLabel('Keep request bodies');
    await keep.waitFor();
    assert.equal(await keep.isChecked(), false, 'off by default');
    await page.getByText('Off by default.', { exact: false }).waitFor();
    await keep.check();
    await until('the gateway keeping bodies', async () => (await admin('GET', '/bodies')).on === true);

    const client = new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'sk-trimgate', maxRetries: 0, timeout: 20_000 });
    const { response } = await client.chat.completions.create(toolRequest(MODEL, 400)).withResponse();
    const id = response.headers.get('x-request-id');
    assert.ok(id, 'the gateway names the request');

    // From the live feed, as a user would: the newest row's time opens its detail.
    await nav('Overview');
    const feed = page.getByRole('table', { name: 'Recent requests' });
    await until('the request in the feed', async () => (await feed.locator(`a[href="#/requests/${id}"]`).count()) === 1, 10_000);
    await feed.locator(`a[href="#/requests/${id}"]`).click();
    const detail = page.getByRole('article', { name: `Request ${id}` });
    await detail.waitFor();
    assert.match(await textOf(detail), /Answered by\s*mock/);
    for (const label of ['Gateway overhead', 'Time to first byte', 'Total']) {
      assert.match(await textOf(detail.locator('dt', { hasText: label }).locator('xpath=following-sibling::dd')), /\d/, label);
    }
    const passes = detail.getByRole('table', { name: 'Passes' });
    assert.match(await textOf(passes), /Tool output/);

    // The block as the provider got it, and one click away the log as the agent sent it.
    const got = await textOf(detail.getByLabel('Block 1 as the provider got it'));
    assert.ok(!got.includes('case_000_keeps_the_bytes_it_did_not_change ... ok'), 'passing lines were cut');
    assert.match(got, /case_211/, 'the failure kept');
    await detail.getByRole('button', { name: 'Show the original' }).first().click();
    const original = detail.getByLabel('Block 1 as the agent sent it');
    await original.waitFor();
    const originalText = await textOf(original);
    assert.match(originalText, /case_000_keeps_the_bytes_it_did_not_change \.\.\. ok/);
    assert.match(originalText, /case_211_keeps_the_bytes_it_did_not_change \.\.\. FAILED/);
    assert.equal(originalText, bigCargoLog(400).trim());

    // Bodies side by side, the rewritten block marked on each side.
    const sentBody = detail.getByLabel('Request body as the agent sent it');
    const gotBody = detail.getByLabel('Request body as the provider got it');
    assert.equal(await sentBody.locator('mark').count(), 1);
    assert.equal(await gotBody.locator('mark').count(), 1);
    assert.match(await textOf(gotBody.locator('mark')), /case_211/);
    assert.ok((await textOf(sentBody.locator('mark'))).length > (await textOf(gotBody.locator('mark'))).length);
    await detail.scrollIntoViewIfNeeded();
    await screenshot('request-detail');

    // The Requests page searches the ledger: by model and status.
    const search = page.getByRole('region', { name: 'Search' });
    await search.getByLabel('Model contains').fill(MODEL);
    await search.getByLabel('Status').selectOption('ok');
    await search.getByRole('button', { name: 'Search' }).click();
    const found = page.getByRole('table', { name: 'Requests found' });
    await until('the request found', async () => (await found.locator(`a[href="#/requests/${id}"]`).count()) === 1, 10_000);
    await search.getByLabel('Status').selectOption('error');
    await until('no failed request', async () => (await textOf(found)).includes('No request matches.'), 10_000);
    await search.getByLabel('Status').selectOption('');
    await screenshot('requests-search');

    // Off again: the gateway forgets the bodies, and the detail says they are not kept.
    await keep.uncheck();
    await until('bodies off', async () => (await admin('GET', '/bodies')).on === false);
    await found.locator(`a[href="#/requests/${id}"]`).click();
    await detail.getByText('Bodies are not kept.', { exact: false }).waitFor();
  });

  it('counts a request’s secret on the Guard page without showing it, opens that request, and switches the mode', async () => {
    // Shaped like a GitHub token, random so that it reads as one: never a real one.
    const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    const secret = `ghp_${Array.from({ length: 36 }, () => ALNUM[randomInt(ALNUM.length)]).join('')}`;
    const client = new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'sk-trimgate', maxRetries: 0, timeout: 20_000 });
    await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `The deploy fails. My .env has GITHUB_TOKEN=${secret} in it.` }] });
    const flagged = await until('the request in the guard’s figures', async () => (await admin('GET', '/guard')).recent[0], 10_000);
    const id = flagged.request_id;
    assert.deepEqual(flagged.kinds, { github_token: 1 });

    await nav('Guard');
    await page.getByRole('heading', { name: 'Guard', level: 1 }).waitFor();
    await until('today’s count', async () => Number(await textOf(page.getByTestId('guard-requests'))) >= 1);
    await page.getByRole('list', { name: 'Secrets by kind today' }).getByText('github_token').waitFor();
    const recent = page.getByRole('table', { name: 'Requests with secrets' });
    await recent.locator(`a[href="#/requests/${id}"]`).waitFor();
    assert.match(await textOf(recent.locator('tbody tr').first()), /github_token ×1/);
    assert.ok(!(await page.content()).includes(secret), 'the secret is nowhere on the page');
    assert.equal(await page.getByRole('radio', { name: /^Redact/ }).isChecked(), true);
    await screenshot('guard');

    if (!FAKE) {
      // The request it lists opens with its kinds, and the Requests page's row says them too.
      await recent.locator(`a[href="#/requests/${id}"]`).click();
      const detail = page.getByRole('article', { name: `Request ${id}` });
      await detail.waitFor();
      assert.match(await textOf(detail.getByTestId('request-secrets')), /^github_token ×1/);
      assert.ok(!(await page.content()).includes(secret), 'nor on the request’s');
      const row = page.getByRole('table', { name: 'Requests found' }).getByRole('row').filter({ has: page.locator(`a[href="#/requests/${id}"]`) });
      assert.equal(await textOf(row.getByTestId('secrets')), 'github_token ×1');
      await screenshot('guard-request');
      await nav('Guard');
    }

    // Block: saved to the config, and a request with a secret is refused.
    await page.getByRole('radio', { name: /^Block/ }).check();
    await page.getByText('Saved to the config. New requests: block.').waitFor();
    assert.equal((await admin('GET', '/guard')).mode, 'block');
    if (!FAKE) {
      const refused = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `GITHUB_TOKEN=${secret}` }] }).then(() => null, (e) => e);
      assert.ok(refused && refused.status >= 400 && refused.status < 500, `refused in block mode: ${refused}`);
    }
    await screenshot('guard-block');
    await page.getByRole('radio', { name: /^Redact/ }).check();
    await page.getByText('Saved to the config. New requests: redact.').waitFor();
    assert.deepEqual(consoleErrors.filter((e) => !/Failed to load resource/.test(e)), []);
  });

  it('has no serious accessibility violations on any page, light or dark, and a visible focus on every control', async () => {
    const axeSource = await readFile(join(UI_DIR, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
    const report = [];
    for (const scheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const name of ['Overview', 'Requests', 'Providers', 'Routes', 'Models & modes', 'Guard', 'Agents', 'Keys', 'Settings']) {
        await nav(name);
        await page.getByRole('heading', { level: 1 }).first().waitFor();
        await page.waitForTimeout(400);
        // Evaluated by the browser's debugging protocol: the page's own policy allows no inline script.
        if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
        const violations = await page.evaluate(async () => {
          const r = await window.axe.run(document, { resultTypes: ['violations'] });
          return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }));
        });
        report.push({ scheme, page: name, violations });
      }
    }
    await writeFile(join(SHOTS, 'axe-report.json'), JSON.stringify(report, null, 1));
    const serious = report.flatMap((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => ({ page: `${r.page} (${r.scheme})`, ...v })));
    assert.deepEqual(serious, [], JSON.stringify(serious, null, 1));
    await page.emulateMedia({ colorScheme: 'light' });

    // The keyboard alone reaches every control of each page, each with a visible focus ring.
    for (const name of ['Overview', 'Requests', 'Providers', 'Routes', 'Models & modes', 'Guard', 'Agents', 'Keys', 'Settings']) {
      await nav(name);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await page.evaluate(() => document.activeElement instanceof HTMLElement && document.activeElement.blur());
      const controls = await page.evaluate(
        () => [...document.querySelectorAll('a[href], button:not([disabled]), input:not([disabled]):not([type=hidden]), select:not([disabled]), textarea:not([disabled]), [tabindex="0"]')].filter((el) => el.getClientRects().length > 0).length,
      );
      const seen = new Set();
      for (let i = 0; i < controls + 5; i++) {
        await page.keyboard.press('Tab');
        const focus = await page.evaluate(() => {
          const el = document.activeElement;
          if (!el || el === document.body) return null;
          const style = getComputedStyle(el);
          const ring = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0) || style.boxShadow !== 'none';
          return { key: `${el.tagName}:${el.id}:${el.getAttribute('aria-label') ?? ''}:${(el.textContent ?? '').trim().slice(0, 30)}:${[...el.parentNode.children].indexOf(el)}`, ring };
        });
        if (!focus) continue;
        assert.ok(focus.ring, `${name}: no visible focus on ${focus.key}`);
        seen.add(focus.key);
      }
      assert.ok(seen.size >= Math.min(controls, 8), `${name}: the keyboard reached ${seen.size} of ${controls} controls`);
    }
    await page.keyboard.press('Escape');
  });

  it('shows the listen address and says autostart and updates live in the desktop app', async () => {
    await nav('Settings');
    await until('the listen address', async () => (await textOf(page.getByTestId('listen'))) === new URL(origin).host);
    await page.getByText('Start at login and updates live in the Trimgate desktop app.').waitFor();
    assert.equal(await page.getByRole('switch', { name: 'Start at login' }).count(), 0);
    // The listen address for the next start: a bad one is refused beside the field.
    const listen = page.getByLabel('Listen address for the next start');
    await until('the listen field', async () => (await listen.inputValue()) !== '');
    await listen.fill('not an address');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await until('the listen problem', async () => (await textOf(page.locator('#s-listen-err'))) !== '');
    await listen.fill('127.0.0.1:18788');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('the gateway moves to 127.0.0.1:18788 at its next start', { exact: false }).waitFor();
    await screenshot('settings');
  });

  it("maps Claude Code's model slots to models of two providers, and the gateway serves them", async () => {
    // A second provider on the same mock, so the slots can go to different ones.
    await admin('POST', '/providers', { name: 'mock-b', kind: 'openai_compatible', base_url: `${mockUrl}/v1`, models: ['m-small'], key: MOCK_KEY });

    await nav('Agents');
    const slots = page.getByRole('form', { name: 'Claude Code model slots' });
    await slots.waitFor();
    await slots.getByLabel('Opus model', { exact: true }).selectOption('mock/gpt-5');
    await slots.getByLabel('Haiku model', { exact: true }).selectOption('mock-b/m-small');
    await slots.getByLabel('Subagent model', { exact: true }).selectOption('mock/gpt-5-mini');
    const after = slots.getByRole('list', { name: 'Routes after Apply' });
    assert.equal(await after.locator('li').count(), 3);
    await slots.getByRole('button', { name: 'Apply slots' }).click();
    await slots.getByText('Applied.', { exact: false }).waitFor();
    await page.getByLabel('Claude Code subagent model', { exact: true }).getByText('export CLAUDE_CODE_SUBAGENT_MODEL=claude-subagent').waitFor();
    await page.getByText('ANTHROPIC_DEFAULT_HAIKU_MODEL=claude-haiku-m-small').waitFor();

    // Applied again with opus changed: replaced, not stacked.
    await slots.getByLabel('Opus model', { exact: true }).selectOption('mock/gpt-5-nano');
    await slots.getByRole('button', { name: 'Apply slots' }).click();
    await slots.getByText('Applied.', { exact: false }).waitFor();
    const { routes } = await admin('GET', '/routes');
    assert.deepEqual(routes, [
      { match: 'claude-opus-*', provider: 'mock', model: 'gpt-5-nano' },
      { match: 'claude-haiku-*', provider: 'mock-b', model: 'm-small' },
      { match: 'claude-subagent', provider: 'mock', model: 'gpt-5-mini' },
    ]);
    await slots.scrollIntoViewIfNeeded();
    await screenshot('claude-slots');

    if (!FAKE) {
      // What Claude Code's /model picker reads.
      const res = await fetch(`${origin}/v1/models?limit=1000`, { headers: { 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-trimgate' } });
      assert.equal(res.status, 200);
      const list = await res.json();
      const byId = Object.fromEntries(list.data.map((m) => [m.id, m]));
      for (const id of ['claude-opus-gpt-5-nano', 'claude-haiku-m-small', 'claude-subagent']) {
        assert.ok(byId[id], `${id} listed: ${JSON.stringify(list.data.map((m) => m.id))}`);
        assert.equal(byId[id].type, 'model');
        assert.match(byId[id].created_at, /^\d{4}-\d\d-\d\dT/);
      }
      assert.equal(byId['claude-haiku-m-small'].display_name, 'claude-haiku-* → m-small');

      // Claude Code's own name for its haiku slot is served by the provider chosen for it.
      const reply = await fetch(`${origin}/v1/messages?beta=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-trimgate' },
        body: JSON.stringify({ model: 'claude-haiku-4-5-20251001', max_tokens: 64, messages: [{ role: 'user', content: 'Say hello.' }] }),
      });
      assert.equal(reply.status, 200, await reply.clone().text());
      assert.equal((await reply.json()).type, 'message');
      const row = await until('the haiku request in the feed', async () => {
        const { requests } = await admin('GET', '/requests?limit=5');
        return requests.find((r) => r.model === 'claude-haiku-4-5-20251001');
      });
      assert.equal(row.provider, 'mock-b');
      assert.equal(row.served, 'm-small');
    }

    // Gone with its provider: its slot route too.
    await admin('DELETE', '/providers/mock-b');
    if (!FAKE) assert.equal((await admin('GET', '/routes')).routes.some((r) => r.provider === 'mock-b'), false);
  });

  it("shows a provider that refuses connections cooling down, and the route's fallback that served", async () => {
    // Nothing listens on loopback port 1: every connection is refused.
    await admin('POST', '/providers', { name: 'dead', kind: 'openai_compatible', base_url: 'http://127.0.0.1:1/v1', models: ['m-dead'] });
    await admin('PATCH', '/routes', { replace: [], routes: [{ match: 'fragile-*', provider: 'dead', model: 'm-dead', fallbacks: [`mock/${MODEL}`] }] });

    await nav('Providers');
    const deadCard = page.getByRole('article', { name: 'dead' });
    await until('dead up before any request', async () => (await textOf(deadCard.getByTestId('health'))) === 'up');

    // One request: refused at `dead`, which cools down at once, and served by the fallback.
    const client = new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'sk-trimgate', maxRetries: 0, timeout: 20_000 });
    const { data, response } = await client.chat.completions.create({ model: 'fragile-1', messages: [{ role: 'user', content: 'Say hello.' }] }).withResponse();
    assert.ok(data.choices.length > 0);
    if (!FAKE) assert.equal(response.headers.get('x-trimgate-provider'), 'mock');

    // The badge follows without a reload: polled like the feed.
    const badge = await until('the cooling-down badge', async () => {
      const t = await textOf(deadCard.getByTestId('health'));
      return /^cooling down · retry in \d+m \d+s$/.test(t) && t;
    });
    assert.match(badge, /retry in (9m|10m)/);
    assert.equal(await deadCard.getByTestId('health').getAttribute('data-state'), 'cooling_down');
    assert.equal(await textOf(page.getByRole('article', { name: 'mock' }).getByTestId('health')), 'up');

    // The routes, with the chain that served.
    const row = page.getByRole('table', { name: 'Routes' }).getByRole('row').filter({ hasText: 'fragile-*' });
    assert.equal(await textOf(row.getByTestId('fallbacks')), `mock/${MODEL}`);
    await row.getByText('dead/m-dead').waitFor();
    await deadCard.scrollIntoViewIfNeeded();
    await screenshot('provider-cooling-down');

    if (!FAKE) {
      // The feed shows the request's two attempts (one request id), and its detail both, in order.
      const id = response.headers.get('x-request-id');
      await nav('Overview');
      const feed = page.getByRole('table', { name: 'Recent requests' });
      await until('both attempts in the feed', async () => (await feed.locator(`a[href="#/requests/${id}"]`).count()) === 2, 10_000);
      await feed.locator(`a[href="#/requests/${id}"]`).first().click();
      const attempts = page.getByRole('article', { name: `Request ${id}` }).getByRole('table', { name: 'Attempts' });
      await attempts.waitFor();
      const tried = await attempts.locator('tbody tr').allTextContents();
      assert.equal(tried.length, 2, tried.join('\n'));
      assert.match(tried[0], /dead/);
      assert.match(tried[1], /mock/);
      await screenshot('request-attempts');
      await nav('Providers');
    }

    // Gone from the window, with its route.
    await deadCard.getByRole('button', { name: 'Delete provider' }).click();
    await deadCard.getByRole('button', { name: 'Yes, delete dead' }).click();
    await deadCard.waitFor({ state: 'detached' });
    if (FAKE) await admin('PATCH', '/routes', { replace: ['fragile-*'], routes: [] });
    else await until('its route gone', async () => (await page.getByRole('table', { name: 'Routes' }).getByText('fragile-*').count()) === 0);
  });

  it('deletes the key and then the provider', async () => {
    await nav('Providers');
    const card = page.getByRole('article', { name: 'mock' });
    await card.getByRole('button', { name: 'Delete key' }).click();
    await card.getByText('Key deleted.').waitFor();
    assert.doesNotMatch(await textOf(card.getByTestId('key-status')), /…/);
    await card.getByRole('button', { name: 'Delete provider' }).click();
    await card.getByRole('button', { name: 'Yes, delete mock' }).click();
    await page.getByRole('heading', { name: 'Add your first provider' }).waitFor();
    await screenshot('provider-deleted');
  });

  it('says an Anthropic provider without a key uses the Claude login of the agent', async () => {
    await page.getByLabel('Name', { exact: true }).fill('claude');
    await page.getByLabel('Kind', { exact: true }).selectOption('anthropic');
    await page.getByRole('button', { name: 'Add provider', exact: true }).click();
    const card = page.getByRole('article', { name: 'claude' });
    await card.waitFor();
    await until('the login note', async () => (await textOf(card.getByTestId('key-status'))).includes('uses your Claude login'));
    if (!FAKE) {
      const token = new URL(windowUrl).hash.replace(/^#token=/, '');
      const res = await fetch(`${origin}/admin/api/providers`, { headers: { authorization: `Bearer ${token}` } });
      const listed = (await res.json()).providers.find((p) => p.name === 'claude');
      assert.equal(listed.client_auth, 'auto');
      assert.equal(listed.uses_client_login, true);
    }
    await screenshot('claude-login');
    await card.getByRole('button', { name: 'Delete provider' }).click();
    await card.getByRole('button', { name: 'Yes, delete claude' }).click();
    await page.getByRole('heading', { name: 'Add your first provider' }).waitFor();
    assert.deepEqual(consoleErrors.filter((e) => !/Failed to load resource/.test(e)), []);
  });
  it('makes a virtual key with a daily budget, shows its key once, and revokes it', async () => {
    await nav('Keys');
    await page.getByRole('heading', { name: 'Keys', level: 1 }).waitFor();
    const form = page.getByRole('form', { name: 'New key' });
    await form.waitFor({ timeout: 10_000 });

    // A name the gateway would not take is caught beside its field.
    await form.getByLabel('Name', { exact: true }).fill('ci bot');
    await form.getByRole('button', { name: 'Make key' }).click();
    await until('the name problem', async () => (await textOf(page.locator('#k-name-err'))).includes('letters, digits'));

    await form.getByLabel('Name', { exact: true }).fill('ci-bot');
    await form.getByLabel('Models', { exact: true }).fill('gpt-5*, gpt-4.1*');
    await form.getByLabel('Daily budget (USD)', { exact: true }).fill('5');
    await form.getByLabel('Expires after', { exact: true }).fill('30d');
    await form.getByLabel('Secrets guard', { exact: true }).selectOption('block');
    await screenshot('key-form');
    await form.getByRole('button', { name: 'Make key' }).click();

    // The key, once, with its warning; kept nowhere but the page.
    const box = page.getByRole('region', { name: 'Key for ci-bot' });
    await box.waitFor();
    const key = await textOf(box.getByRole('figure', { name: 'New key' }));
    assert.match(key, /^tg-vk-[0-9a-f]{20,}$/);
    await box.getByText('it cannot be shown again', { exact: false }).waitFor();
    const copy = box.getByRole('button', { name: 'Copy New key' });
    await copy.click();
    await until('the copy acknowledged', async () => (await textOf(copy)) === 'Copied');
    const kept = await page.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }) + location.href);
    assert.ok(!kept.includes(key), 'the new key is not kept in storage or the URL');

    const row = page.getByRole('table', { name: 'Virtual keys' }).getByRole('row').filter({ hasText: 'ci-bot' });
    await row.waitFor();
    assert.equal(await row.getAttribute('data-state'), 'active');
    assert.ok((await textOf(row)).includes(`${key.slice(0, 12)}…`), 'the row shows the key’s hint');
    assert.match(await textOf(row), /gpt-5\*, gpt-4\.1\*/);
    assert.equal(await textOf(row.getByTestId('spent-day')), '$0.00 of $5.00');
    assert.equal(await row.getByTestId('spent-day').locator('[data-level]').getAttribute('data-level'), 'ok');
    assert.match(await textOf(row.getByTestId('spent-month')), /no budget/);
    assert.match(await textOf(row.getByTestId('expires')), /^in (29d 23h|30d 0h)$/);
    assert.equal(await textOf(row.getByTestId('key-guard')), 'Guard: block');
    await screenshot('key-made');

    // The same name again: the gateway's refusal shows beside the form.
    await page.getByRole('button', { name: 'New key', exact: true }).click();
    await form.getByLabel('Name', { exact: true }).fill('ci-bot');
    await form.getByRole('button', { name: 'Make key' }).click();
    await until('the gateway’s refusal', async () => (await textOf(page.getByTestId('key-form-error'))).includes('exists already'));
    await form.getByRole('button', { name: 'Cancel' }).click();

    // Dismissed: gone from the page for good.
    await box.getByRole('button', { name: 'I have copied it' }).click();
    await box.waitFor({ state: 'detached' });
    assert.ok(!(await page.content()).includes(key), 'the key is gone once dismissed');

    await row.getByRole('button', { name: 'Revoke ci-bot' }).click();
    await row.getByRole('button', { name: 'Yes, revoke ci-bot' }).click();
    await until('the key revoked', async () => (await row.getAttribute('data-state')) === 'revoked');
    assert.equal(await textOf(row.getByTestId('key-state')), 'revoked');
    assert.equal(await row.getByRole('button', { name: 'Revoke ci-bot' }).count(), 0);
    const { keys } = await admin('GET', '/keys');
    assert.ok(keys.find((k) => k.name === 'ci-bot').revoked_ms > 0, 'the gateway has it revoked');
    if (FAKE) {
      // The log of admin actions (the stand-in keeps one; the gateway's may not exist yet).
      const log = page.getByRole('table', { name: 'Admin actions' });
      await log.getByRole('row').filter({ hasText: 'DELETE /admin/api/keys/ci-bot' }).waitFor();
      assert.match(await textOf(log.locator('tbody tr').first()), /DELETE \/admin\/api\/keys\/ci-bot/);
    }
    await screenshot('key-revoked');
    assert.deepEqual(consoleErrors.filter((e) => !/Failed to load resource/.test(e)), []);
  });
  it('shows in Settings where the log file is, and offers its folder path in a browser', async () => {
    await nav('Settings');
    const section = page.getByRole('region', { name: 'Logs and diagnostics' });
    const path = await until('the log file path', async () => textOf(section.getByTestId('log-path')));
    assert.match(path, /\/trimgate\/logs\/trimgate\.log$/);
    if (!FAKE) assert.equal(path, join(tmp, 'state', 'trimgate', 'logs', 'trimgate.log'));
    assert.equal(await section.getByTestId('log-problem').count(), 0);
    // "Open logs" is the desktop app's; a browser gets the path to copy.
    assert.equal(await section.getByRole('button', { name: 'Open logs' }).count(), 0);
    await section.getByRole('button', { name: "Copy the log folder's path" }).waitFor();
    await section.scrollIntoViewIfNeeded();
    await screenshot('settings-logs');
  });

  it('copies diagnostics with the version and no provider key', async () => {
    const DIAG_KEY = 'sk-diag-e2e-4b7d1f09c3a85e62';
    await admin('POST', '/providers', { name: 'diag', kind: 'openai_compatible', base_url: `${mockUrl}/v1`, models: ['m-diag'], key: DIAG_KEY });
    const { version } = await admin('GET', '/status');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    const section = page.getByRole('region', { name: 'Logs and diagnostics' });
    await section.getByRole('button', { name: 'Copy diagnostics' }).click();
    // Copied, or (where the page has no clipboard) shown to copy by hand.
    const text = await until('the diagnostics', async () => {
      if ((await section.getByTestId('diagnostics-copied').count()) > 0) return page.evaluate(() => navigator.clipboard.readText());
      if ((await section.getByTestId('diagnostics-text').count()) > 0) return section.getByTestId('diagnostics-text').inputValue();
      return false;
    });
    assert.ok(text.includes(`version: ${version}`), text);
    assert.ok(text.includes('diag'), text);
    assert.ok(!text.includes(DIAG_KEY), 'the provider key must not be in the diagnostics');
    assert.ok(!(await page.content()).includes(DIAG_KEY), 'nor in the page');
    await screenshot('diagnostics-copied');
    await admin('DELETE', '/providers/diag');
  });

  it('edits routes and answers live which route a model would take', async () => {
    // Two providers with no implicit families: without a route, a Claude name goes nowhere.
    await admin('POST', '/providers', { name: 'cheap', kind: 'openai_compatible', base_url: `${mockUrl}/v1`, models: ['m-small'], key: MOCK_KEY });
    await admin('POST', '/providers', { name: 'big', kind: 'openai_compatible', base_url: `${mockUrl}/v1`, models: ['m-large'], key: MOCK_KEY });
    // The stand-in keeps the routes of providers deleted earlier; the gateway drops them.
    if (FAKE) await admin('PUT', '/routes', { routes: [] });
    await nav('Routes');
    await page.getByRole('heading', { name: 'Routes', level: 1 }).waitFor();
    const answer = page.getByTestId('route-answer');
    const which = page.getByLabel('Which route would this model take?', { exact: true });
    await which.fill('claude-haiku-4-5');
    await until('the answer with no route', async () => (await textOf(answer)).includes('a client gets 404'));

    const addRoute = async (n, match, provider, model) => {
      await page.getByRole('button', { name: 'Add route', exact: true }).click();
      await page.getByLabel(`Route ${n} match`, { exact: true }).fill(match);
      await page.getByLabel(`Route ${n} provider`, { exact: true }).selectOption(provider);
      await page.getByLabel(`Route ${n} model`, { exact: true }).fill(model);
    };
    await addRoute(1, 'claude-haiku-*', 'cheap', 'm-small');
    await addRoute(2, 'claude-*', 'big', 'm-large');
    await until('the answer naming the first route', async () => (await textOf(answer)).startsWith('Route 1 (claude-haiku-*) → cheap as m-small'));
    await which.fill('claude-sonnet-4-5');
    await until('the answer as the model is typed', async () => (await textOf(answer)).startsWith('Route 2 (claude-*) → big as m-large'));
    await which.fill('claude-haiku-4-5');
    await until('the answer back on the first route', async () => (await textOf(answer)).startsWith('Route 1 (claude-haiku-*)'));
    assert.equal(await page.getByRole('list', { name: 'Routes', exact: true }).locator('li.matched').getAttribute('data-match'), 'claude-haiku-*');
    await screenshot('routes-which');
  });

  it('reorders routes by dragging and from the keyboard, and the answer follows', async () => {
    const answer = page.getByTestId('route-answer');
    const order = async () => page.getByRole('list', { name: 'Routes', exact: true }).locator(':scope > li').evaluateAll((lis) => lis.map((li) => li.dataset.match));

    // Drag the broad route above the narrow one: it now takes Haiku too.
    await page.getByRole('img', { name: 'Drag claude-*', exact: true }).dragTo(page.getByRole('listitem', { name: 'Route 1: claude-haiku-*' }));
    await until('the dragged order', async () => JSON.stringify(await order()) === JSON.stringify(['claude-*', 'claude-haiku-*']));
    await until('the answer after the drag', async () => (await textOf(answer)).startsWith('Route 1 (claude-*) → big as m-large'));
    await screenshot('routes-dragged');

    // Alt+ArrowUp on the narrow route's field moves it back, says so, and keeps the focus.
    const narrow = page.getByLabel('Route 2 match', { exact: true });
    await narrow.focus();
    await page.keyboard.press('Alt+ArrowUp');
    await until('the keyboard order', async () => JSON.stringify(await order()) === JSON.stringify(['claude-haiku-*', 'claude-*']));
    await until('the move announced', async () => (await textOf(page.getByTestId('route-announcer'))) === 'Moved claude-haiku-* to position 1 of 2.');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Route 1 match');
    await until('the answer after the keyboard move', async () => (await textOf(answer)).startsWith('Route 1 (claude-haiku-*) → cheap as m-small'));

    // And the buttons, by their names.
    await page.getByRole('button', { name: 'Move claude-haiku-* down', exact: true }).click();
    await until('the answer after the button', async () => (await textOf(answer)).startsWith('Route 1 (claude-*)'));
    await page.getByRole('button', { name: 'Move claude-haiku-* up', exact: true }).click();
    await until('the answer back', async () => (await textOf(answer)).startsWith('Route 1 (claude-haiku-*)'));
    await screenshot('routes-keyboard');
  });

  it('shows a glob that does not compile by its field with Save disabled, then saves the fixed routes in order', async () => {
    const save = page.getByRole('button', { name: 'Save routes', exact: true });
    const broad = page.getByLabel('Route 2 match', { exact: true });
    await broad.fill('claude-[');
    await until('the field marked wrong', async () => (await broad.getAttribute('aria-invalid')) === 'true');
    // Its message beside it, and the field described by it.
    const describedBy = await broad.getAttribute('aria-describedby');
    assert.match(await textOf(page.locator(`#${describedBy}`)), /"claude-\[" is not a valid glob/);
    assert.equal(await page.getByRole('listitem', { name: 'Route 2: claude-[' }).locator(`#${describedBy}`).count(), 1);
    assert.match(await textOf(page.getByTestId('route-problems')), /Route 2, match: "claude-\[" is not a valid glob/);
    assert.equal(await save.isDisabled(), true);
    await until('no answer while the draft is wrong', async () => (await textOf(page.getByTestId('route-answer'))).includes('Fix the problems'));
    await screenshot('routes-bad-glob');
    assert.equal((await admin('GET', '/routes')).routes.length, 0, 'nothing saved while checking');

    await broad.fill('claude-*');
    await until('the problem gone', async () => (await page.getByTestId('route-problems').count()) === 0);
    await until('Save enabled', async () => !(await save.isDisabled()));
    await save.click();
    await page.getByText('Saved. New requests take these routes.').waitFor();
    const { routes } = await admin('GET', '/routes');
    assert.deepEqual(routes, [
      { match: 'claude-haiku-*', provider: 'cheap', model: 'm-small' },
      { match: 'claude-*', provider: 'big', model: 'm-large' },
    ]);
    assert.equal(await save.isDisabled(), true, 'nothing left to save');
    await screenshot('routes-saved');

    // The Claude Code slots preset lives here too: applying it shows in the editor at once.
    const slots = page.getByRole('form', { name: 'Claude Code model slots' });
    await slots.getByLabel('Haiku model', { exact: true }).selectOption('big/m-large');
    await slots.getByRole('button', { name: 'Apply slots' }).click();
    await until('the slot route in the editor', async () => (await page.getByLabel('Route 1 provider', { exact: true }).inputValue()) === 'big');
    await until('the answer after the preset', async () => (await textOf(page.getByTestId('route-answer'))).startsWith('Route 1 (claude-haiku-*) → big as m-large'));
    await admin('PUT', '/routes', { routes });

    if (!FAKE) {
      // The gateway sends Haiku where the editor said it would.
      const client = new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'sk-trimgate', maxRetries: 0 });
      const { response } = await client.chat.completions.create({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Say hello.' }] }).withResponse();
      assert.equal(response.headers.get('x-trimgate-provider'), 'cheap');
      assert.equal(response.headers.get('x-trimgate-model'), 'm-small');
    }
    await admin('DELETE', '/providers/cheap');
    await admin('DELETE', '/providers/big');
    if (FAKE) await admin('PUT', '/routes', { routes: [] });
    assert.deepEqual(consoleErrors.filter((e) => !/Failed to load resource/.test(e)), []);
  });

  // ---- import from other tools: the three real sample files of tests/fixtures/import/

  const IMPORT_SAMPLES = join(UI_DIR, '..', 'tests', 'fixtures', 'import');
  /** Fake keys the samples hold: never on the page, only their masks. */
  const SAMPLE_KEYS = ['sk-fake-ccswitch-deepseek-0001', 'sk-or-fake-ccr-openrouter-0001', 'sk-ant-fake-litellm-anthropic-0001'];

  /** Imports one sample through the window: preview, Apply, report; the providers it stored keys for are on the page with their keys in the keychain. */
  async function importSample(file, formatLabel, expectInPreview, shot) {
    await nav('Providers');
    const panel = page.getByRole('region', { name: 'Import' });
    await panel.getByLabel('File to import', { exact: true }).setInputFiles(join(IMPORT_SAMPLES, file));
    const preview = panel.getByRole('region', { name: 'Import preview' });
    await preview.waitFor();
    assert.match(await textOf(preview.getByTestId('import-summary')), new RegExp(`Read as ${formatLabel}`));
    const providersTable = preview.getByRole('table', { name: 'Providers to add' });
    for (const name of expectInPreview) await providersTable.getByRole('cell', typeof name === 'string' ? { name, exact: true } : { name }).first().waitFor();
    const html = await page.content();
    for (const key of SAMPLE_KEYS) assert.ok(!html.includes(key), `${key} is on the page`);
    await screenshot(`${shot}-preview`);

    await preview.getByRole('button', { name: 'Apply import' }).click();
    await panel.getByTestId('import-report').waitFor();
    const stored = (await panel.getByRole('list', { name: 'Keys stored' }).getByRole('listitem').allTextContents()).map((t) => t.split(':')[0].trim());
    assert.ok(stored.length > 0, 'keys were stored');
    for (const name of stored) await page.getByRole('article', { name, exact: true }).waitFor();
    const { providers } = await admin('GET', '/providers');
    for (const name of stored) {
      const p = providers.find((q) => q.name === name);
      assert.equal(p?.key.source, 'keychain', `${name}: ${JSON.stringify(p)}`);
      assert.equal(p.key.set, true, `${name}'s key is in the keychain`);
    }
    await screenshot(`${shot}-applied`);
    return { stored, providers };
  }

  it('imports a CC Switch database: its Claude Code, Codex and Gemini providers, the current one on Claude Code\'s slots', async () => {
    if (FAKE) return;
    const { stored } = await importSample('cc-switch.db', 'CC Switch database', ['deepseek', 'kimi-for-coding', 'kimi', 'gemini-relay'], 'import-cc-switch');
    assert.deepEqual(stored, ['deepseek', 'kimi-for-coding', 'kimi', 'gemini-relay']);
    const { routes } = await admin('GET', '/routes');
    const sonnet = routes.find((r) => r.match === 'claude-sonnet-*');
    assert.deepEqual([sonnet?.provider, sonnet?.model], ['deepseek', 'deepseek-v4-pro']);
    await page.getByRole('table', { name: 'Routes' }).getByRole('cell', { name: 'claude-sonnet-*', exact: true }).waitFor();
  });

  it('imports a claude-code-router config, renaming a provider whose name is taken', async () => {
    if (FAKE) return;
    await importSample('claude-code-router.json', 'claude-code-router config.json', [/^deepseek-ccr\b/, 'openrouter', 'ollama'], 'import-ccr');
    const report = page.getByRole('region', { name: 'Import' });
    // Its deepseek key names $DEEPSEEK_API_KEY, which the gateway does not have: said so.
    await report.getByText('key of provider "deepseek"', { exact: true }).waitFor();
    await report.getByText('Router.think', { exact: true }).waitFor();
  });

  it('imports a LiteLLM config: deployments as providers, model names as routes with their fallbacks', async () => {
    if (FAKE) return;
    await importSample('litellm.yaml', 'LiteLLM config.yaml', ['openai', 'anthropic'], 'import-litellm');
    const { routes } = await admin('GET', '/routes');
    const gpt = routes.find((r) => r.match === 'gpt-4o');
    assert.deepEqual([gpt?.provider, gpt?.fallbacks], ['openai', ['anthropic/claude-sonnet-4-5']]);
  });

  it('says which file is malformed and why, and changes nothing', async () => {
    if (FAKE) return;
    await nav('Providers');
    const before = await admin('GET', '/providers');
    const panel = page.getByRole('region', { name: 'Import' });
    await panel.getByLabel('Format', { exact: true }).selectOption('claude-code-router');
    await panel.getByLabel('File to import', { exact: true }).setInputFiles({ name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{"Providers": [') });
    const error = panel.getByTestId('import-error');
    await until('the import error', async () => /broken\.json: not valid JSON/.test(await textOf(error)));
    await screenshot('import-malformed');
    assert.deepEqual(await admin('GET', '/providers'), before);
    await panel.getByLabel('Format', { exact: true }).selectOption('');
    assert.deepEqual(consoleErrors.filter((e) => !/Failed to load resource/.test(e)), []);
  });

  it('shows today in the glance (`?glance`): saved and spent, and each provider’s health, without the shell', async () => {
    const midnight = new Date();
    midnight.setHours(0, 0, 0, 0);
    const { total } = await admin('GET', `/savings?by=provider&since=${midnight.getTime()}`);
    const { providers } = await admin('GET', '/health');
    await page.setViewportSize({ width: 300, height: 190 });
    await page.goto(`${origin}/ui/?glance${new URL(windowUrl).hash}`);
    const glance = page.getByRole('main', { name: 'Trimgate today' });
    await until('the glance’s figures', async () => /tokens · \$/.test(await textOf(glance.getByTestId('glance-spent'))));
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).count(), 0, 'the glance has no navigation');
    assert.match(await textOf(glance.getByTestId('glance-saved')), /^[0-9.]+[kMB]? tokens · (\$[0-9.,]+|<\$0\.0001)$/);
    assert.ok(total.requests > 0, 'the steps before sent requests today');
    assert.ok(!(await textOf(glance.getByTestId('glance-spent'))).startsWith('0 tokens'), 'today’s spending shows');
    const items = await glance.getByRole('list', { name: 'Providers' }).getByRole('listitem').allTextContents();
    assert.deepEqual(
      items.map((t) => t.replace(/^●\s*/, '').trim().split(':')[0]),
      providers.map((p) => p.provider),
    );
    await screenshot('glance');
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.goto(windowUrl);
  });
});
