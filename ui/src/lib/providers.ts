/**
 * The add-provider form's logic, kept out of the page so it can be tested: the fields each
 * kind shows, the checks the window makes before sending (the gateway checks again, as
 * the config does), and the body it sends. A cloud's secrets — Azure's api-key, a Bedrock
 * API key, an Entra app's client secret — go in that body only to be stored in the
 * keychain; a service-account key file is named by its path, never read, and AWS keys
 * never go in at all: Bedrock reads them from the AWS credential chain.
 */

import type { BedrockApi, NewProvider, Provider, ProviderKind } from './api';

export const KIND_LABELS: Record<ProviderKind, string> = {
  openai: 'OpenAI',
  anthropic: 'Anthropic',
  deepseek: 'DeepSeek',
  gemini: 'Google Gemini',
  openai_compatible: 'OpenAI-compatible (Ollama, OpenRouter, vLLM…)',
  azure_openai: 'Azure OpenAI',
  bedrock: 'Amazon Bedrock',
  vertex: 'Google Vertex AI',
};

export const BASE_URL_HINTS: Record<ProviderKind, string> = {
  openai: 'Optional. Default: https://api.openai.com/v1',
  anthropic: 'Optional. Default: https://api.anthropic.com/v1',
  deepseek: 'Optional. Default: https://api.deepseek.com/v1',
  gemini: 'Optional. Default: https://generativelanguage.googleapis.com/v1beta',
  openai_compatible: 'Required: the server’s URL ending in its API version, e.g. http://127.0.0.1:11434/v1',
  azure_openai: 'Required: the resource’s endpoint, e.g. https://my-resource.openai.azure.com',
  bedrock: 'Optional. Default: https://bedrock-runtime.<region>.amazonaws.com',
  vertex: 'Optional. Default: the project and location’s Vertex AI endpoint',
};

/** How an Azure provider signs: its api-key, or a Microsoft Entra ID token from a command or an app registration. */
export type AzureAuth = 'key' | 'entra_command' | 'entra_app';
/** How a Bedrock provider signs: the AWS credential chain (optionally a profile of it), or a Bedrock API key. */
export type BedrockAuth = 'chain' | 'key';
/** How a Vertex provider signs: Application Default Credentials, or a service-account key file. */
export type VertexAuth = 'adc' | 'file';

export interface ProviderForm {
  name: string;
  kind: ProviderKind;
  baseUrl: string;
  /** Comma-separated. */
  models: string;
  key: string;
  apiVersion: string;
  azureAuth: AzureAuth;
  entraCommand: string;
  tenantId: string;
  clientId: string;
  clientSecret: string;
  region: string;
  bedrockAuth: BedrockAuth;
  awsProfile: string;
  bedrockApi: BedrockApi;
  project: string;
  location: string;
  vertexAuth: VertexAuth;
  credentialsFile: string;
}

export function emptyProviderForm(): ProviderForm {
  return {
    name: '',
    kind: 'openai',
    baseUrl: '',
    models: '',
    key: '',
    apiVersion: '',
    azureAuth: 'key',
    entraCommand: '',
    tenantId: '',
    clientId: '',
    clientSecret: '',
    region: '',
    bedrockAuth: 'chain',
    awsProfile: '',
    bedrockApi: 'auto',
    project: '',
    location: '',
    vertexAuth: 'adc',
    credentialsFile: '',
  };
}

/** A field of the form, by the name the gateway's problems end with (`providers.x.region`). */
export type FormField =
  | 'name'
  | 'kind'
  | 'base_url'
  | 'models'
  | 'key'
  | 'api_version'
  | 'azure_auth'
  | 'command'
  | 'tenant_id'
  | 'client_id'
  | 'client_secret'
  | 'region'
  | 'bedrock_auth'
  | 'aws_profile'
  | 'bedrock_api'
  | 'project'
  | 'location'
  | 'vertex_auth'
  | 'credentials_file';

/** The fields the form shows for its kind and the way it signs, in order. */
export function fieldsFor(f: Pick<ProviderForm, 'kind' | 'azureAuth' | 'bedrockAuth' | 'vertexAuth'>): FormField[] {
  const head: FormField[] = ['name', 'kind'];
  switch (f.kind) {
    case 'azure_openai': {
      const auth: FormField[] =
        f.azureAuth === 'key' ? ['key'] : f.azureAuth === 'entra_command' ? ['command'] : ['tenant_id', 'client_id', 'client_secret'];
      return [...head, 'base_url', 'api_version', 'azure_auth', ...auth, 'models'];
    }
    case 'bedrock':
      return [...head, 'region', 'bedrock_auth', f.bedrockAuth === 'chain' ? 'aws_profile' : 'key', 'bedrock_api', 'base_url', 'models'];
    case 'vertex':
      return [...head, 'project', 'location', 'vertex_auth', ...(f.vertexAuth === 'file' ? (['credentials_file'] as FormField[]) : []), 'base_url', 'models'];
    default:
      return [...head, 'base_url', 'models', 'key'];
  }
}

/** What the key field is called for a kind: the key each cloud's own console names. */
export function keyLabel(kind: ProviderKind): string {
  if (kind === 'azure_openai') return 'api-key';
  if (kind === 'bedrock') return 'Bedrock API key';
  return 'API key';
}

const PLAIN = /^[A-Za-z0-9._-]+$/;
const AWS_ACCESS_KEY_ID = /^(AKIA|ASIA)[A-Z0-9]{16}$/;
const PROFILE = /^[A-Za-z0-9._@-]{1,64}$/;

/** Whether a key file's field holds its contents instead of its path. */
export function looksLikeKeyContents(value: string): boolean {
  const v = value.trim();
  return v.startsWith('{') || v.includes('\n') || v.includes('private_key') || v.includes('BEGIN PRIVATE KEY');
}

/** The form's problems by field, before anything is sent; empty when it may go. */
export function checkProviderForm(f: ProviderForm, taken: readonly string[]): Partial<Record<FormField, string>> {
  const errs: Partial<Record<FormField, string>> = {};
  const name = f.name.trim();
  const base = f.baseUrl.trim();
  if (!name) errs.name = 'Give the provider a name, e.g. openai or ollama.';
  else if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) errs.name = 'Use up to 64 letters, digits, - or _.';
  else if (taken.includes(name)) errs.name = `There is already a provider named ${name}.`;
  if (f.kind === 'openai_compatible' && !base) errs.base_url = 'An OpenAI-compatible server needs its base URL.';
  else if (f.kind === 'azure_openai' && !base) errs.base_url = 'Give the resource’s endpoint, e.g. https://my-resource.openai.azure.com.';
  else if (base && !/^https?:\/\/\S+$/.test(base)) errs.base_url = 'Use an http:// or https:// URL.';

  if (f.kind === 'azure_openai') {
    if (f.apiVersion.trim() && !PLAIN.test(f.apiVersion.trim())) errs.api_version = 'An API version looks like 2024-10-21; leave it empty for the v1 paths.';
    if (f.azureAuth === 'entra_command' && !f.entraCommand.trim()) errs.command = 'Give the command that prints a token, e.g. az account get-access-token …';
    if (f.azureAuth === 'entra_app') {
      if (!f.tenantId.trim()) errs.tenant_id = 'Give the directory (tenant) id or domain.';
      else if (!PLAIN.test(f.tenantId.trim())) errs.tenant_id = 'A tenant is an id or a domain, e.g. contoso.onmicrosoft.com.';
      if (!f.clientId.trim()) errs.client_id = 'Give the app registration’s client id.';
      if (!f.clientSecret.trim()) errs.client_secret = 'Paste the app’s client secret; it goes to the keychain.';
    }
  }
  if (f.kind === 'bedrock') {
    if (!f.region.trim()) errs.region = 'Name the AWS region, e.g. us-east-1.';
    else if (!/^[a-z0-9-]+$/.test(f.region.trim())) errs.region = 'A region looks like us-east-1.';
    const profile = f.awsProfile.trim();
    if (f.bedrockAuth === 'chain' && profile) {
      if (AWS_ACCESS_KEY_ID.test(profile)) errs.aws_profile = 'That is an AWS access key id: name a profile of your AWS config instead. AWS keys stay in AWS’s own files.';
      else if (!PROFILE.test(profile)) errs.aws_profile = 'A profile name is letters, digits, -, _, . or @.';
    }
    if (f.bedrockAuth === 'key' && !f.key.trim()) errs.key = 'Paste the Bedrock API key, or sign with the AWS credential chain.';
  }
  if (f.kind === 'vertex') {
    if (!f.project.trim()) errs.project = 'Name the Google Cloud project.';
    else if (!PLAIN.test(f.project.trim())) errs.project = 'A project id is letters, digits and -.';
    if (!f.location.trim()) errs.location = 'Name the location, e.g. global or us-east5.';
    else if (!PLAIN.test(f.location.trim())) errs.location = 'A location looks like global, us-east5 or europe-west1.';
    if (f.vertexAuth === 'file') {
      if (!f.credentialsFile.trim()) errs.credentials_file = 'Give the service-account key file’s path.';
      else if (looksLikeKeyContents(f.credentialsFile)) errs.credentials_file = 'Give the key file’s path; its contents stay in the file.';
    }
  }
  return errs;
}

function given(s: string): string | undefined {
  return s.trim() || undefined;
}

function list(s: string): string[] | undefined {
  const out = s
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  return out.length ? out : undefined;
}

/** The body `POST /admin/api/providers` gets: only the fields of the form's kind and choices. */
export function newProviderBody(f: ProviderForm): NewProvider {
  const body: NewProvider = {
    name: f.name.trim(),
    kind: f.kind,
    base_url: given(f.baseUrl),
    models: list(f.models),
  };
  switch (f.kind) {
    case 'azure_openai':
      body.api_version = given(f.apiVersion);
      if (f.azureAuth === 'key') body.key = given(f.key);
      else if (f.azureAuth === 'entra_command') body.entra = { command: f.entraCommand.trim() };
      else body.entra = { tenant_id: f.tenantId.trim(), client_id: f.clientId.trim(), client_secret: f.clientSecret.trim() };
      break;
    case 'bedrock':
      body.region = given(f.region);
      if (f.bedrockAuth === 'chain') body.aws_profile = given(f.awsProfile);
      else body.key = given(f.key);
      if (f.bedrockApi !== 'auto') body.bedrock_api = f.bedrockApi;
      break;
    case 'vertex':
      body.project = given(f.project);
      body.location = given(f.location);
      if (f.vertexAuth === 'file') body.credentials_file = given(f.credentialsFile);
      break;
    default:
      body.key = given(f.key);
  }
  for (const k of Object.keys(body) as (keyof NewProvider)[]) {
    if (body[k] === undefined) delete body[k];
  }
  return body;
}

/** A cloud provider's settings as the card lists them, label and value. */
export function cloudFacts(p: Pick<Provider, 'kind' | 'cloud'>): { label: string; value: string }[] {
  const c = p.cloud;
  if (!c) return [];
  switch (p.kind) {
    case 'azure_openai':
      return [{ label: 'API version', value: c.api_version ?? 'v1 paths (none)' }];
    case 'bedrock':
      return [
        { label: 'Region', value: c.region ?? '' },
        { label: 'AWS profile', value: c.aws_profile ?? 'the default credential chain' },
        { label: 'Bedrock API', value: c.bedrock_api === 'invoke' ? 'InvokeModel' : c.bedrock_api === 'converse' ? 'Converse' : 'auto (InvokeModel for Claude, Converse for the rest)' },
      ];
    case 'vertex':
      return [
        { label: 'Project', value: c.project ?? '' },
        { label: 'Location', value: c.location ?? '' },
        { label: 'Key file', value: c.credentials_file ?? 'none: Application Default Credentials' },
      ];
    default:
      return [];
  }
}

/** Whether the card offers a key to set: not for Vertex (no key), nor for Azure signing with Entra ID. */
export function takesKey(p: Pick<Provider, 'kind' | 'cloud'>): boolean {
  if (p.kind === 'vertex') return false;
  if (p.kind === 'azure_openai' && p.cloud?.entra) return false;
  return true;
}
