// The official openai and @anthropic-ai/sdk npm packages through the real gateway binary,
// with the project's mock provider behind it: streaming and not, tool calls, typed errors,
// and the row each request leaves in the gateway's ledger.
import { test, before, beforeEach, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, writeFileSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const BIN = process.env.TRIMGATE_BIN ?? resolve(import.meta.dirname, '../../target/debug/trimgate');
const children = [];
let dir;
let gateway;
let mockUrl;
let ledgerDb;

const dataHome = mkdtempSync(join(tmpdir(), 'trimgate-node-data-'));

function start(args, prefix, env = {}) {
  // The default ledger lives in the platform data dir: keep it out of the user's.
  const child = spawn(BIN, args, { env: { ...process.env, XDG_DATA_HOME: dataHome, ...env }, stdio: ['ignore', 'pipe', 'ignore'] });
  children.push(child);
  return new Promise((ok, fail) => {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => { if (line.startsWith(prefix)) ok(line.slice(prefix.length).trim()); });
    child.on('exit', (code) => fail(new Error(`${args[0]} exited with ${code} before listening`)));
  });
}

before(async () => {
  const mock = await start(['mock', '--listen', '127.0.0.1:0'], 'mock provider listening on ');
  mockUrl = mock;
  dir = mkdtempSync(join(tmpdir(), 'trimgate-node-'));
  const config = join(dir, 'config.toml');
  ledgerDb = join(dir, 'ledger.sqlite');
  writeFileSync(config, `
[ledger]
url = "sqlite://${ledgerDb}"

[providers.mock-openai]
kind = "openai"
base_url = "${mock}/v1"
api_key = { env = "NODE_TEST_OPENAI_KEY" }

[providers.mock-anthropic]
kind = "anthropic"
base_url = "${mock}/v1"
api_key = { env = "NODE_TEST_ANTHROPIC_KEY" }

# Side-call models: every request is answered from the response cache when it can be.
[[cache.models]]
match = "*haiku*"
exact = "always"

# Crossed routes, so the SDKs go through translation between dialects.
[[routes]]
match = "claude-on-chat-*"
provider = "mock-openai"

[[routes]]
match = "gpt-on-messages-*"
provider = "mock-anthropic"
`);
  gateway = await start(['serve', '--config', config, '--listen', '127.0.0.1:0'], 'Trimgate listening on ', {
    NODE_TEST_OPENAI_KEY: 'sk-mock-openai', NODE_TEST_ANTHROPIC_KEY: 'sk-ant-mock', TRIMGATE_LOG: 'warn',
  });
});

after(() => {
  for (const child of children) child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
  rmSync(dataHome, { recursive: true, force: true });
});

// Each model call goes out with an x-request-id of its own, which the gateway keeps as the
// row's request_id, so a test finds its calls' rows exactly.
const calls = [];
let checked = 0;

async function tagged(url, init = {}) {
  if ((init.method ?? 'GET').toUpperCase() !== 'POST') return fetch(url, init);
  const headers = new Headers(init.headers);
  if (!headers.has('x-request-id')) headers.set('x-request-id', `node-${process.pid}-${calls.length + 1}`);
  const call = { id: headers.get('x-request-id'), path: new URL(String(url)).pathname, status: null };
  calls.push(call);
  const response = await fetch(url, { ...init, headers });
  call.status = response.status;
  return response;
}

const openai = () => new OpenAI({ baseURL: `${gateway}/v1`, apiKey: 'placeholder', maxRetries: 0, fetch: tagged });
const anthropic = () => new Anthropic({ baseURL: gateway, apiKey: 'placeholder', maxRetries: 0, fetch: tagged });

// A failed test's calls are not the next one's.
beforeEach(() => { checked = calls.length; });

// Node 20 has no SQLite module: python3's reads the ledger.
const SELECT_ROWS = `
import json, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=5)
db.row_factory = sqlite3.Row
ids = sys.argv[2:]
rows = db.execute(f"SELECT * FROM requests WHERE request_id IN ({', '.join('?' * len(ids))})", ids)
print(json.dumps([dict(r) for r in rows]))
`;

/** The calls made since the last look, each with its rows (written in batches a little after
 * each answer: polled for, up to 10 s). */
async function newRows() {
  const made = calls.slice(checked);
  checked = calls.length;
  assert.ok(made.length > 0, 'no model call to check');
  const ids = made.map((c) => c.id);
  for (const deadline = Date.now() + 10_000; ;) {
    const byId = new Map();
    for (const row of JSON.parse(execFileSync('python3', ['-c', SELECT_ROWS, ledgerDb, ...ids], { encoding: 'utf8' }))) {
      byId.set(row.request_id, [...(byId.get(row.request_id) ?? []), row]);
    }
    if (ids.every((id) => byId.has(id)) || Date.now() > deadline) return made.map((call) => [call, byId.get(call.id) ?? []]);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

// Served models the bundled price table (gateway-core/pricing.toml) prices; the routes' own
// names (claude-on-chat-*, gpt-on-messages-*) are in no table, and their rows carry no cost.
const PRICED = /^(gpt-5|claude-sonnet-5-5|claude-haiku-4-5)$/;

/** Each model call since the last check: one answered is one row, answered whole, with the
 * provider's token counts (none estimated) and a cost where the served model is priced; one
 * refused has the client's status on its last row, any attempts before it `retried`.
 * Returns each call's last row. */
async function checkLedger() {
  const last = [];
  for (const [call, rows] of await newRows()) {
    rows.sort((a, b) => a.attempt - b.attempt);
    const seen = `${call.path} ${call.id}: ${JSON.stringify(rows)}`;
    if (call.status === 200) {
      assert.equal(rows.length, 1, seen);
      checkRow(rows[0], seen);
    } else {
      assert.equal(rows.at(-1)?.status, call.status, seen);
      assert.ok(rows.slice(0, -1).every((r) => r.outcome === 'retried'), seen);
      assert.ok(rows.every((r) => r.cost_usd === null && r.tokens_estimated === null), seen);
    }
    last.push(rows.at(-1));
  }
  return last;
}

function checkRow(row, seen) {
  assert.deepEqual([row.status, row.outcome, row.kind], [200, 'completed', 'generation'], seen);
  assert.equal(row.tokens_estimated, null, seen);
  assert.notEqual(row.saved_tokens, null, seen);
  const priced = PRICED.test(row.model_served);
  if (row.cache === 'hit') {
    // Replayed by the response cache: no tokens used, nothing spent, and its cost saved.
    assert.deepEqual([row.input_tokens, row.output_tokens], [null, null], seen);
    if (priced) assert.ok(row.cost_usd === 0 && row.saved_usd > 0, seen);
    else assert.equal(row.cost_usd, null, seen);
  } else {
    assert.ok(row.input_tokens > 0 && row.output_tokens > 0, seen);
    if (priced) assert.ok(row.cost_usd > 0, seen);
    else assert.equal(row.cost_usd, null, seen);
  }
}

const tool = {
  type: 'function',
  function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } },
};

test('openai chat completion and stream', async () => {
  const r = await openai().chat.completions.create({ model: 'gpt-5', messages: [{ role: 'user', content: 'node says hi' }] });
  assert.match(r.choices[0].message.content, /node says hi/);
  assert.ok(r.usage.prompt_tokens > 0);
  const stream = await openai().chat.completions.create({
    model: 'gpt-5', messages: [{ role: 'user', content: 'node streams' }], stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.match(text, /node streams/);
  assert.ok(usage.completion_tokens > 0);
  const [, streamed] = await checkLedger();
  assert.deepEqual([streamed.input_tokens, streamed.output_tokens], [usage.prompt_tokens, usage.completion_tokens]);
});

test('openai chat tool call round trip', async () => {
  const messages = [{ role: 'user', content: 'find it' }];
  const first = await openai().chat.completions.create({ model: 'gpt-5', messages, tools: [tool] });
  const call = first.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'lookup');
  assert.deepEqual(JSON.parse(call.function.arguments), { q: 'mock' });
  messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'found: 42' });
  const second = await openai().chat.completions.create({ model: 'gpt-5', messages, tools: [tool] });
  assert.match(second.choices[0].message.content, /found: 42/);
  await checkLedger();
});

test('openai responses stream', async () => {
  const stream = openai().responses.stream({ model: 'gpt-5', input: 'node responses' });
  let text = '';
  for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
  const final = await stream.finalResponse();
  assert.match(text, /node responses/);
  assert.ok(final.usage.output_tokens > 0);
  const [row] = await checkLedger();
  assert.equal(row.output_tokens, final.usage.output_tokens);
});

test('anthropic message, stream and tool use', async () => {
  const m = await anthropic().messages.create({ model: 'claude-sonnet-5-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi from node' }] });
  assert.match(m.content[0].text, /hi from node/);
  const stream = anthropic().messages.stream({ model: 'claude-sonnet-5-5', max_tokens: 50, messages: [{ role: 'user', content: 'node stream' }] });
  const final = await stream.finalMessage();
  assert.match(final.content[0].text, /node stream/);
  assert.ok(final.usage.output_tokens > 0);
  const tools = [{ name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }];
  const first = await anthropic().messages.stream({ model: 'claude-sonnet-5-5', max_tokens: 50, tools, messages: [{ role: 'user', content: 'use it' }] }).finalMessage();
  const use = first.content.find((b) => b.type === 'tool_use');
  assert.deepEqual(use.input, { q: 'mock' });
  const second = await anthropic().messages.create({
    model: 'claude-sonnet-5-5', max_tokens: 50, tools,
    messages: [
      { role: 'user', content: 'use it' },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'the answer is 7' }] },
    ],
  });
  assert.match(second.content[0].text, /the answer is 7/);
  await checkLedger();
});

test('errors are the SDKs typed errors', async () => {
  await assert.rejects(
    openai().chat.completions.create({ model: 'nope-model', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && /nope-model/.test(e.message),
  );
  await assert.rejects(
    anthropic().messages.create({ model: 'nope-model', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.NotFoundError,
  );
  await checkLedger();
});

test('anthropic SDK streams a tool round trip from a Chat provider', async () => {
  const tools = [{ name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }];
  const model = 'claude-on-chat-1';
  const first = await anthropic().messages.stream({ model, max_tokens: 50, tools, messages: [{ role: 'user', content: 'use it' }] }).finalMessage();
  assert.equal(first.stop_reason, 'tool_use');
  const use = first.content.find((b) => b.type === 'tool_use');
  assert.deepEqual(use.input, { q: 'mock' });
  const second = await anthropic().messages.stream({
    model, max_tokens: 50, tools,
    messages: [
      { role: 'user', content: 'use it' },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'seven' }] },
    ],
  }).finalMessage();
  assert.match(second.content[0].text, /seven/);
  await checkLedger();
});

test('openai SDK streams a tool round trip from an Anthropic provider', async () => {
  const model = 'gpt-on-messages-1';
  const messages = [{ role: 'user', content: 'find it' }];
  const runner = openai().chat.completions.stream({ model, messages, tools: [tool] });
  const first = await runner.finalChatCompletion();
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  const call = first.choices[0].message.tool_calls[0];
  assert.deepEqual(JSON.parse(call.function.arguments), { q: 'mock' });
  messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'found: 9' });
  const second = await openai().chat.completions.stream({ model, messages, tools: [tool] }).finalChatCompletion();
  assert.match(second.choices[0].message.content, /found: 9/);
  await checkLedger();
});

// A real `cargo test` log (captured for the savings corpus) as a tool result: the provider
// gets it compacted with the failures kept, and the client sees what happened in the headers.
const LOG = readFileSync(resolve(import.meta.dirname, '../../bench/corpus/outputs/cargo-test-failures.txt'), 'utf8');
const FAILING = [...LOG.matchAll(/^---- (\S+) stdout ----$/gm)].map((m) => m[1]);

/** The tool result's text in the last request the mock provider received, in any dialect. */
async function lastToolText() {
  const requests = await (await fetch(`${mockUrl}/_mock/requests`)).json();
  const body = JSON.parse(requests.at(-1).body);
  for (const m of body.messages ?? []) {
    if (m.role === 'tool') return typeof m.content === 'string' ? m.content : m.content[0].text;
    for (const b of Array.isArray(m.content) ? m.content : []) {
      if (b.type === 'tool_result') return typeof b.content === 'string' ? b.content : b.content[0].text;
    }
  }
  throw new Error('no tool result reached the provider');
}

async function checkOptimized(response) {
  assert.equal(response.headers.get('x-trimgate-applied'), 'tool_output=auto');
  assert.ok(Number(response.headers.get('x-trimgate-saved-tokens')) > 200);
  const sent = await lastToolText();
  assert.ok(sent.length < LOG.length * 0.8, `${sent.length} vs ${LOG.length}`);
  assert.match(sent, /elided/);
  for (const name of FAILING) assert.ok(sent.includes(name), `${name} lost`);
}

test('tool results are compacted for openai clients, natively and across dialects', async () => {
  assert.ok(FAILING.length >= 3);
  for (const model of ['gpt-5', 'gpt-on-messages-1']) {
    const { data, response } = await openai().chat.completions.create({
      model,
      messages: [
        { role: 'user', content: 'run the tests' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"cargo test"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: LOG },
      ],
      tools: [tool],
    }).withResponse();
    assert.equal(data.choices[0].finish_reason, 'stop');
    await checkOptimized(response);
  }
  await checkLedger();
});

test('tool results are compacted for anthropic clients, natively and across dialects', async () => {
  for (const model of ['claude-sonnet-5-5', 'claude-on-chat-1']) {
    const { data, response } = await anthropic().messages.create({
      model,
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'run the tests' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'cargo test' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: LOG }] },
      ],
    }).withResponse();
    assert.equal(data.stop_reason, 'end_turn');
    await checkOptimized(response);
  }
  await checkLedger();
});

test('the response cache answers the SDKs again, whole and streamed', async () => {
  const requests = async () => (await (await fetch(`${mockUrl}/_mock/requests`)).json()).length;
  const clear = () => fetch(`${mockUrl}/_mock/requests`, { method: 'DELETE' });
  const chatText = async (stream) => {
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    return text;
  };
  const messageText = async (stream) => {
    let text = '';
    for await (const e of stream) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
    return text;
  };
  const nonce = `${process.pid}-${Date.now()}`;
  const cases = [
    ['openai chat', () => openai().chat.completions.create({ model: 'gpt-5', temperature: 0, messages: [{ role: 'user', content: `cache ${nonce}` }] }).withResponse(), (r) => r.choices[0].message.content],
    ['openai chat stream', () => openai().chat.completions.create({ model: 'gpt-5', temperature: 0, stream: true, messages: [{ role: 'user', content: `cache ${nonce}` }] }).withResponse(), chatText],
    ['anthropic', () => anthropic().messages.create({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: `cache ${nonce}` }] }).withResponse(), (r) => r.content[0].text],
    ['anthropic stream', () => anthropic().messages.create({ model: 'claude-haiku-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: `cache ${nonce}` }] }).withResponse(), messageText],
    ['anthropic stream, translated', () => anthropic().messages.create({ model: 'claude-on-chat-haiku', max_tokens: 64, stream: true, messages: [{ role: 'user', content: `cache ${nonce}` }] }).withResponse(), messageText],
  ];
  for (const [name, call, textOf] of cases) {
    await clear();
    // An answer is stored once it is complete: read the first one before asking again.
    const first = await call();
    const text = await textOf(first.data);
    const second = await call();
    assert.equal(first.response.headers.get('x-trimgate-cache'), 'miss', name);
    assert.equal(second.response.headers.get('x-trimgate-cache'), 'hit', name);
    assert.ok(text.length > 0, name);
    assert.equal(await textOf(second.data), text, name);
    assert.equal(await requests(), 1, `${name}: one upstream call`);
    const rows = await checkLedger();
    assert.deepEqual(rows.map((r) => r.cache), ['miss', 'hit'], name);
  }
});

test('an openai stream left midway is cancelled, charged for its input and the output relayed', async () => {
  // Ten words a frame at a time, 400 ms apart: the client leaves after the first.
  const headers = { 'x-mock-frame-interval-ms': '400', 'x-mock-reply': 'one two three four five six seven eight nine ten' };
  const stream = await openai().chat.completions.create(
    { model: 'gpt-5', stream: true, messages: [{ role: 'user', content: 'leave midway' }] }, { headers });
  for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) break;
  stream.controller.abort();
  const [[call, [row, ...more]]] = await newRows();
  assert.equal(more.length, 0, call.id);
  assert.equal(row.outcome, 'client_cancelled', JSON.stringify(row));
  // An OpenAI provider reports usage only at the end: both counts are the gateway's.
  assert.equal(row.tokens_estimated, 'input,output', JSON.stringify(row));
  assert.ok(row.input_tokens > 0 && row.output_tokens > 0 && row.output_tokens < 10, JSON.stringify(row));
  assert.ok(row.cost_usd > 0, JSON.stringify(row));
});
