// The official openai and @anthropic-ai/sdk npm packages through the real gateway binary,
// with the project's mock provider behind it: streaming and not, tool calls, typed errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
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
  writeFileSync(config, `
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

const openai = () => new OpenAI({ baseURL: `${gateway}/v1`, apiKey: 'placeholder', maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: gateway, apiKey: 'placeholder', maxRetries: 0 });

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
});

test('openai responses stream', async () => {
  const stream = openai().responses.stream({ model: 'gpt-5', input: 'node responses' });
  let text = '';
  for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
  const final = await stream.finalResponse();
  assert.match(text, /node responses/);
  assert.ok(final.usage.output_tokens > 0);
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
  }
});
