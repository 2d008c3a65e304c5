import { describe, expect, it } from 'vitest';
import type { Provider } from '../src/lib/api';
import {
  checkProviderForm,
  cloudFacts,
  emptyProviderForm,
  fieldsFor,
  keyLabel,
  looksLikeKeyContents,
  newProviderBody,
  takesKey,
  type ProviderForm,
} from '../src/lib/providers';

function form(over: Partial<ProviderForm> = {}): ProviderForm {
  return { ...emptyProviderForm(), name: 'cloud', ...over };
}

describe('fieldsFor', () => {
  it('shows the first-party kinds as before: base URL, models, key', () => {
    expect(fieldsFor(form({ kind: 'openai' }))).toEqual(['name', 'kind', 'base_url', 'models', 'key']);
  });
  it('asks Azure for its endpoint, an api-version and how it signs', () => {
    expect(fieldsFor(form({ kind: 'azure_openai' }))).toEqual(['name', 'kind', 'base_url', 'api_version', 'azure_auth', 'key', 'models']);
    expect(fieldsFor(form({ kind: 'azure_openai', azureAuth: 'entra_command' }))).toContain('command');
    const app = fieldsFor(form({ kind: 'azure_openai', azureAuth: 'entra_app' }));
    expect(app).toEqual(expect.arrayContaining(['tenant_id', 'client_id', 'client_secret']));
    expect(app).not.toContain('key');
  });
  it('asks Bedrock for a region, and a profile of the AWS chain or a Bedrock API key', () => {
    const chain = fieldsFor(form({ kind: 'bedrock' }));
    expect(chain.slice(0, 5)).toEqual(['name', 'kind', 'region', 'bedrock_auth', 'aws_profile']);
    expect(chain).not.toContain('key');
    const key = fieldsFor(form({ kind: 'bedrock', bedrockAuth: 'key' }));
    expect(key).toContain('key');
    expect(key).not.toContain('aws_profile');
  });
  it('asks Vertex for a project and location, and a key file only when it signs with one', () => {
    expect(fieldsFor(form({ kind: 'vertex' }))).toEqual(['name', 'kind', 'project', 'location', 'vertex_auth', 'base_url', 'models']);
    expect(fieldsFor(form({ kind: 'vertex', vertexAuth: 'file' }))).toContain('credentials_file');
    expect(fieldsFor(form({ kind: 'vertex', vertexAuth: 'file' }))).not.toContain('key');
  });
});

describe('checkProviderForm', () => {
  it('passes a complete form of each cloud', () => {
    expect(checkProviderForm(form({ kind: 'azure_openai', baseUrl: 'https://r.openai.azure.com' }), [])).toEqual({});
    expect(checkProviderForm(form({ kind: 'bedrock', region: 'us-east-1', awsProfile: 'work' }), [])).toEqual({});
    expect(checkProviderForm(form({ kind: 'vertex', project: 'my-project', location: 'global' }), [])).toEqual({});
  });
  it('needs Azure’s endpoint, and the parts of the Entra ID source chosen', () => {
    expect(checkProviderForm(form({ kind: 'azure_openai' }), []).base_url).toMatch(/endpoint/);
    const app = checkProviderForm(form({ kind: 'azure_openai', baseUrl: 'https://r.openai.azure.com', azureAuth: 'entra_app' }), []);
    expect(Object.keys(app).sort()).toEqual(['client_id', 'client_secret', 'tenant_id']);
    const cmd = checkProviderForm(form({ kind: 'azure_openai', baseUrl: 'https://r.openai.azure.com', azureAuth: 'entra_command' }), []);
    expect(cmd.command).toBeDefined();
    expect(checkProviderForm(form({ kind: 'azure_openai', baseUrl: 'https://r.openai.azure.com', apiVersion: '2024 10' }), []).api_version).toBeDefined();
  });
  it('needs a Bedrock region, and refuses an AWS access key where a profile goes', () => {
    expect(checkProviderForm(form({ kind: 'bedrock' }), []).region).toMatch(/region/);
    expect(checkProviderForm(form({ kind: 'bedrock', region: 'us-east-1', awsProfile: 'AKIAIOSFODNN7EXAMPLE' }), []).aws_profile).toMatch(/access key/);
    expect(checkProviderForm(form({ kind: 'bedrock', region: 'us-east-1', awsProfile: 'wJalrXUtnFEMI/K7MDENG' }), []).aws_profile).toBeDefined();
    expect(checkProviderForm(form({ kind: 'bedrock', region: 'us-east-1', bedrockAuth: 'key' }), []).key).toBeDefined();
  });
  it('needs Vertex’s project and location, and a key file’s path, never its contents', () => {
    const empty = checkProviderForm(form({ kind: 'vertex' }), []);
    expect(Object.keys(empty).sort()).toEqual(['location', 'project']);
    const contents = '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----"}';
    const bad = checkProviderForm(form({ kind: 'vertex', project: 'p', location: 'global', vertexAuth: 'file', credentialsFile: contents }), []);
    expect(bad.credentials_file).toMatch(/path/);
    expect(checkProviderForm(form({ kind: 'vertex', project: 'p', location: 'global', vertexAuth: 'file' }), []).credentials_file).toBeDefined();
  });
  it('keeps the checks every kind had', () => {
    expect(checkProviderForm(form({ name: '' }), []).name).toBeDefined();
    expect(checkProviderForm(form({ name: 'taken' }), ['taken']).name).toMatch(/already/);
    expect(checkProviderForm(form({ kind: 'openai_compatible' }), []).base_url).toBeDefined();
    expect(checkProviderForm(form({ baseUrl: 'ftp://x' }), []).base_url).toMatch(/http/);
  });
});

describe('newProviderBody', () => {
  it('sends Azure’s api-key to the keychain, or its Entra ID source instead', () => {
    expect(newProviderBody(form({ kind: 'azure_openai', baseUrl: ' https://r.openai.azure.com ', apiVersion: '2024-10-21', key: ' k ' }))).toEqual({
      name: 'cloud',
      kind: 'azure_openai',
      base_url: 'https://r.openai.azure.com',
      api_version: '2024-10-21',
      key: 'k',
    });
    const app = newProviderBody(
      form({ kind: 'azure_openai', baseUrl: 'https://r.openai.azure.com', azureAuth: 'entra_app', tenantId: 't', clientId: 'c', clientSecret: 's', key: 'left over' }),
    );
    expect(app.entra).toEqual({ tenant_id: 't', client_id: 'c', client_secret: 's' });
    expect(app.key).toBeUndefined();
    expect(newProviderBody(form({ kind: 'azure_openai', azureAuth: 'entra_command', entraCommand: 'az account get-access-token' })).entra).toEqual({
      command: 'az account get-access-token',
    });
  });
  it('sends Bedrock a region and a profile, or its API key — never both, never AWS keys', () => {
    expect(newProviderBody(form({ kind: 'bedrock', region: 'us-east-1', awsProfile: 'work', key: 'ignored', bedrockApi: 'converse' }))).toEqual({
      name: 'cloud',
      kind: 'bedrock',
      region: 'us-east-1',
      aws_profile: 'work',
      bedrock_api: 'converse',
    });
    const key = newProviderBody(form({ kind: 'bedrock', region: 'eu-west-1', bedrockAuth: 'key', key: 'ABSK', awsProfile: 'ignored' }));
    expect(key).toEqual({ name: 'cloud', kind: 'bedrock', region: 'eu-west-1', key: 'ABSK' });
  });
  it('sends Vertex its project, location and a key file’s path only when chosen', () => {
    expect(newProviderBody(form({ kind: 'vertex', project: 'p', location: 'us-east5', credentialsFile: '/k.json' }))).toEqual({
      name: 'cloud',
      kind: 'vertex',
      project: 'p',
      location: 'us-east5',
    });
    expect(newProviderBody(form({ kind: 'vertex', project: 'p', location: 'global', vertexAuth: 'file', credentialsFile: '/k.json', key: 'x' })).credentials_file).toBe('/k.json');
  });
  it('sends a first-party provider as before', () => {
    expect(newProviderBody(form({ kind: 'openai', models: 'gpt-5, gpt-5-mini', key: 'sk-1' }))).toEqual({
      name: 'cloud',
      kind: 'openai',
      models: ['gpt-5', 'gpt-5-mini'],
      key: 'sk-1',
    });
  });
});

describe('the card', () => {
  const base: Provider = {
    name: 'p',
    kind: 'bedrock',
    base_url: 'https://bedrock-runtime.us-east-1.amazonaws.com',
    dialects: ['anthropic_messages'],
    models: [],
    client_auth: 'never',
    uses_client_login: false,
    key: { source: 'none', set: false },
    cloud: { region: 'us-east-1', aws_profile: null, bedrock_api: 'auto' },
    credentials: 'the AWS credential chain, SigV4 in us-east-1',
  };
  it('lists a cloud’s settings', () => {
    expect(cloudFacts(base)).toEqual([
      { label: 'Region', value: 'us-east-1' },
      { label: 'AWS profile', value: 'the default credential chain' },
      { label: 'Bedrock API', value: 'auto (InvokeModel for Claude, Converse for the rest)' },
    ]);
    expect(cloudFacts({ kind: 'vertex', cloud: { project: 'p', location: 'global', credentials_file: null } })[2].value).toMatch(/Application Default/);
    expect(cloudFacts({ kind: 'openai', cloud: null })).toEqual([]);
  });
  it('offers a key only where one is taken', () => {
    expect(takesKey(base)).toBe(true);
    expect(takesKey({ kind: 'vertex', cloud: { project: 'p', location: 'global' } })).toBe(false);
    expect(takesKey({ kind: 'azure_openai', cloud: { api_version: null, entra: { command: 'az' } } })).toBe(false);
    expect(takesKey({ kind: 'azure_openai', cloud: { api_version: null, entra: null } })).toBe(true);
    expect(keyLabel('azure_openai')).toBe('api-key');
    expect(keyLabel('bedrock')).toBe('Bedrock API key');
  });
  it('tells a key file’s contents from its path', () => {
    expect(looksLikeKeyContents('/etc/trimgate/sa.json')).toBe(false);
    expect(looksLikeKeyContents('C:\\keys\\sa.json')).toBe(false);
    expect(looksLikeKeyContents(' {"type": "service_account"}')).toBe(true);
  });
});
