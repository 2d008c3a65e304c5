// The official openai and @anthropic-ai/sdk npm packages through the real gateway binary to
// the three clouds, with the project's mock playing them: Azure OpenAI (classic deployment
// paths and v1, an api-key), Amazon Bedrock (InvokeModel for Claude, Converse for Nova, SigV4
// from the AWS credential chain) and Google Vertex AI (Claude by rawPredict, a service
// account's token). Each in its own dialect and translated, streamed and not, with the row
// each request leaves in the gateway's ledger.
import { test, before, beforeEach, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { createInterface } from 'node:readline';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const BIN = process.env.TRIMGATE_BIN ?? resolve(import.meta.dirname, '../../target/debug/trimgate');
const AZURE_KEY = 'mock-azure-openai-key';
const AWS_KEY_ID = 'AKIATRIMGATENODE0001';
const DEPLOYMENT = 'my-deployment';
const API_VERSION = '2024-10-21';
const BEDROCK_CLAUDE = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
const BEDROCK_NOVA = 'amazon.nova-pro-v1:0';
const VERTEX_CLAUDE = 'claude-sonnet-4-5@20250929';
const VERTEX = '/v1/projects/proj/locations/us-east5/publishers';
const ECHO = 'Hello from the mock. You said: ';

const children = [];
const dir = mkdtempSync(join(tmpdir(), 'trimgate-node-clouds-'));
const ledgerDb = join(dir, 'ledger.sqlite');
let gateway;
let mockUrl;

/** This process's environment less every cloud credential, with an AWS credential chain that
 * finds only the test keys: empty shared files, no instance metadata. */
function isolatedEnv(extra) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(AWS_|AZURE_|GOOGLE_|GCLOUD|CLOUDSDK_)/.test(k)));
  for (const name of ['aws-config', 'aws-credentials']) writeFileSync(join(dir, name), '');
  return {
    ...env,
    XDG_DATA_HOME: dir,
    TRIMGATE_LOG: 'warn',
    AWS_CONFIG_FILE: join(dir, 'aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(dir, 'aws-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
    ...extra,
  };
}

function start(args, prefix, env) {
  const child = spawn(BIN, args, { env, stdio: ['ignore', 'pipe', 'ignore'] });
  children.push(child);
  return new Promise((ok, fail) => {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => { if (line.startsWith(prefix)) ok(line.slice(prefix.length).trim()); });
    child.on('exit', (code) => fail(new Error(`${args[0]} exited with ${code} before listening`)));
  });
}

before(async () => {
  mockUrl = await start(['mock', '--listen', '127.0.0.1:0'], 'mock provider listening on ', isolatedEnv());
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const saFile = join(dir, 'service-account.json');
  writeFileSync(saFile, JSON.stringify({
    type: 'service_account', project_id: 'proj', private_key_id: 'node-test-key', private_key: privateKey,
    client_email: 'trimgate-node@proj.iam.gserviceaccount.com', client_id: '1', token_uri: `${mockUrl}/token`,
  }));
  const config = join(dir, 'config.toml');
  writeFileSync(config, `
[ledger]
url = "sqlite://${ledgerDb}"

[providers.az]
kind = "azure_openai"
base_url = "${mockUrl}"
api_version = "${API_VERSION}"
api_key = { env = "NODE_TEST_AZURE_KEY" }

[providers.az-v1]
kind = "azure_openai"
base_url = "${mockUrl}"
api_key = { env = "NODE_TEST_AZURE_KEY" }

[providers.br]
kind = "bedrock"
region = "us-east-1"
base_url = "${mockUrl}"

[providers.vx]
kind = "vertex"
project = "proj"
location = "us-east5"
base_url = "${mockUrl}/v1/projects/proj/locations/us-east5"
credentials_file = "${saFile}"

[[routes]]
match = "gpt-az"
provider = "az"
model = "${DEPLOYMENT}"

[[routes]]
match = "gpt-az-v1"
provider = "az-v1"
model = "${DEPLOYMENT}"

[[routes]]
match = "claude-br"
provider = "br"
model = "${BEDROCK_CLAUDE}"

[[routes]]
match = "nova-br"
provider = "br"
model = "${BEDROCK_NOVA}"

[[routes]]
match = "claude-vx"
provider = "vx"
model = "${VERTEX_CLAUDE}"
`);
  gateway = await start(['serve', '--config', config, '--listen', '127.0.0.1:0'], 'Trimgate listening on ', isolatedEnv({
    NODE_TEST_AZURE_KEY: AZURE_KEY, AWS_ACCESS_KEY_ID: AWS_KEY_ID, AWS_SECRET_ACCESS_KEY: 'node/test+secret',
  }));
});

after(() => {
  for (const child of children) child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

// Each model call goes out with an x-request-id of its own, kept as its row's request_id.
const calls = [];
let checked = 0;

async function tagged(url, init = {}) {
  if ((init.method ?? 'GET').toUpperCase() !== 'POST') return fetch(url, init);
  const headers = new Headers(init.headers);
  headers.set('x-request-id', `node-clouds-${process.pid}-${calls.length + 1}`);
  const call = { id: headers.get('x-request-id'), status: null };
  calls.push(call);
  const response = await fetch(url, { ...init, headers });
  call.status = response.status;
  return response;
}

const openai = () => new OpenAI({ baseURL: `${gateway}/v1`, apiKey: 'placeholder', maxRetries: 0, fetch: tagged });
const anthropic = () => new Anthropic({ baseURL: gateway, apiKey: 'placeholder', maxRetries: 0, fetch: tagged });

/** What the mock received since the last look, whose path starts with `prefix`. */
async function sent(prefix) {
  const all = await (await fetch(`${mockUrl}/_mock/requests`)).json();
  return all.filter((r) => r.path.startsWith(prefix));
}

beforeEach(async () => {
  checked = calls.length;
  await fetch(`${mockUrl}/_mock/requests`, { method: 'DELETE' });
});

// Node 20 has no SQLite module: python3's reads the ledger.
const SELECT_ROWS = `
import json, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=5)
db.row_factory = sqlite3.Row
ids = sys.argv[2:]
rows = db.execute(f"SELECT * FROM requests WHERE request_id IN ({', '.join('?' * len(ids))})", ids)
print(json.dumps([dict(r) for r in rows]))
`;

/** The one call made since the last look: answered whole, its one row from `provider`,
 * streamed or not, with the token counts the client saw (polled for: rows are written in
 * batches a little after each answer). */
async function checkRow(provider, streamed, [input, output]) {
  const made = calls.slice(checked);
  checked = calls.length;
  assert.equal(made.length, 1, JSON.stringify(made));
  assert.equal(made[0].status, 200);
  let rows = [];
  for (const deadline = Date.now() + 10_000; rows.length === 0 && Date.now() < deadline;) {
    rows = JSON.parse(execFileSync('python3', ['-c', SELECT_ROWS, ledgerDb, made[0].id], { encoding: 'utf8' }));
    if (rows.length === 0) await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.equal(rows.length, 1, JSON.stringify(rows));
  const row = rows[0];
  const seen = JSON.stringify(row);
  assert.deepEqual([row.status, row.outcome, row.provider, Boolean(row.streamed)], [200, 'completed', provider, streamed], seen);
  assert.deepEqual([row.input_tokens, row.output_tokens], [input, output], seen);
  assert.equal(row.tokens_estimated, null, seen);
}

async function chatStream(model, text, extra = {}) {
  const stream = await openai().chat.completions.create({
    model, messages: [{ role: 'user', content: text }], stream: true, stream_options: { include_usage: true },
  }, extra);
  let content = '';
  let usage = null;
  for await (const chunk of stream) {
    content += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  return { content, usage };
}

test('openai chat to an Azure deployment, with its api-key on the classic path', async () => {
  const r = await openai().chat.completions.create(
    { model: 'gpt-az', messages: [{ role: 'user', content: 'node to azure' }] },
    { headers: { 'x-mock-reply': 'azure answered node' } },
  );
  assert.equal(r.choices[0].message.content, 'azure answered node');
  const [request] = await sent('/openai/');
  assert.equal(request.path_and_query, `/openai/deployments/${DEPLOYMENT}/chat/completions?api-version=${API_VERSION}`);
  assert.equal(request.headers['api-key'], AZURE_KEY);
  assert.equal(request.headers.authorization, undefined);
  assert.equal(JSON.parse(request.body).model, DEPLOYMENT);
  await checkRow('az', false, [r.usage.prompt_tokens, r.usage.completion_tokens]);
});

test('openai chat streamed to Azure v1, the deployment in the body', async () => {
  const { content, usage } = await chatStream('gpt-az-v1', 'stream to v1', { headers: { 'x-mock-reply': 'v1 streams' } });
  assert.equal(content, 'v1 streams');
  const [request] = await sent('/openai/');
  assert.equal(request.path_and_query, '/openai/v1/chat/completions');
  assert.equal(request.headers['api-key'], AZURE_KEY);
  assert.equal(JSON.parse(request.body).model, DEPLOYMENT);
  await checkRow('az-v1', true, [usage.prompt_tokens, usage.completion_tokens]);
});

test('anthropic messages streamed to Azure, translated to Chat', async () => {
  const final = await anthropic().messages.stream(
    { model: 'gpt-az', max_tokens: 50, messages: [{ role: 'user', content: 'claude sdk to azure' }] },
    { headers: { 'x-mock-reply': 'translated back' } },
  ).finalMessage();
  assert.equal(final.content[0].text, 'translated back');
  assert.equal(final.stop_reason, 'end_turn');
  const [request] = await sent('/openai/');
  assert.equal(request.path, `/openai/deployments/${DEPLOYMENT}/chat/completions`);
  await checkRow('az', true, [final.usage.input_tokens, final.usage.output_tokens]);
});

test('anthropic message to Claude on Bedrock through InvokeModel, signed with SigV4', async () => {
  const m = await anthropic().messages.create({ model: 'claude-br', max_tokens: 50, messages: [{ role: 'user', content: 'node to bedrock' }] });
  assert.equal(m.content[0].text, `${ECHO}node to bedrock`);
  const [request] = await sent('/model/');
  assert.equal(request.path, '/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke');
  assert.match(request.headers.authorization, new RegExp(`^AWS4-HMAC-SHA256 Credential=${AWS_KEY_ID}/\\d{8}/us-east-1/bedrock/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$`));
  const body = JSON.parse(request.body);
  assert.equal(body.anthropic_version, 'bedrock-2023-05-31');
  assert.equal(body.model, undefined);
  await checkRow('br', false, [m.usage.input_tokens, m.usage.output_tokens]);
});

test('anthropic stream from Claude on Bedrock: its event stream arrives as SSE', async () => {
  const stream = anthropic().messages.stream({ model: 'claude-br', max_tokens: 50, messages: [{ role: 'user', content: 'stream from bedrock' }] });
  let text = '';
  stream.on('text', (delta) => { text += delta; });
  const final = await stream.finalMessage();
  assert.equal(text, `${ECHO}stream from bedrock`);
  assert.ok(final.usage.input_tokens > 0 && final.usage.output_tokens > 0);
  const [request] = await sent('/model/');
  assert.equal(request.path, '/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream');
  assert.equal(request.headers.accept, 'application/vnd.amazon.eventstream');
  await checkRow('br', true, [final.usage.input_tokens, final.usage.output_tokens]);
});

test('openai chat streamed to Nova on Bedrock through ConverseStream', async () => {
  const { content, usage } = await chatStream('nova-br', 'node to nova');
  assert.equal(content, `${ECHO}node to nova`);
  const [request] = await sent('/model/');
  assert.equal(request.path, '/model/amazon.nova-pro-v1%3A0/converse-stream');
  assert.deepEqual(JSON.parse(request.body).messages, [{ role: 'user', content: [{ text: 'node to nova' }] }]);
  await checkRow('br', true, [usage.prompt_tokens, usage.completion_tokens]);
});

test('anthropic stream from Claude on Vertex, with the service account token', async () => {
  const final = await anthropic().messages.stream(
    { model: 'claude-vx', max_tokens: 50, messages: [{ role: 'user', content: 'node to vertex' }] },
    { headers: { 'x-mock-reply': 'vertex streams to node' } },
  ).finalMessage();
  assert.equal(final.content[0].text, 'vertex streams to node');
  const [request] = await sent(VERTEX);
  assert.equal(request.path, `${VERTEX}/anthropic/models/${VERTEX_CLAUDE}:streamRawPredict`);
  assert.match(request.headers.authorization, /^Bearer ya29\.mock-/);
  const body = JSON.parse(request.body);
  assert.equal(body.anthropic_version, 'vertex-2023-10-16');
  assert.equal(body.model, undefined);
  await checkRow('vx', true, [final.usage.input_tokens, final.usage.output_tokens]);
});

test('openai chat to Claude on Vertex, translated to rawPredict', async () => {
  const r = await openai().chat.completions.create(
    { model: 'claude-vx', messages: [{ role: 'user', content: 'chat to vertex' }] },
    { headers: { 'x-mock-reply': 'vertex via chat' } },
  );
  assert.equal(r.choices[0].message.content, 'vertex via chat');
  assert.equal(r.choices[0].finish_reason, 'stop');
  const [request] = await sent(VERTEX);
  assert.equal(request.path, `${VERTEX}/anthropic/models/${VERTEX_CLAUDE}:rawPredict`);
  await checkRow('vx', false, [r.usage.prompt_tokens, r.usage.completion_tokens]);
});
