import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { exposedSecretFile } from '../secret-files.js';
import type { SecretReference, WebhookConfig } from './config.js';
import { parseSecret, type SigningKey } from './sign.js';

/** What subscriptions need of the configuration (structural, so config.ts can call in without a cycle). */
export interface SubscriptionSource {
  readonly environment: 'production' | 'development' | 'sandbox';
  readonly tenants: ReadonlyArray<{
    readonly businessId: string;
    readonly webhooks?: readonly WebhookConfig[] | undefined;
  }>;
}

/** One endpoint, ready to deliver to: secrets resolved, patterns compiled. Never log it whole. */
export interface Endpoint {
  /** Stable across restarts and config reordering; carried in retry messages (no secret in it). */
  readonly id: string;
  readonly businessId: string;
  readonly url: URL;
  /** For logs and metrics: host[:port] only, never the path, query or credentials. */
  readonly host: string;
  readonly keys: readonly SigningKey[];
  readonly allowPrivateNetwork: boolean;
  readonly matches: (type: string) => boolean;
}

/**
 * Event type patterns: `*` is any run of characters within one dot-separated part, `**` any run
 * across parts. Ten lines instead of picomatch: event types are not paths, and picomatch's
 * path rules (dotfiles, slashes, braces) would only be surprises here.
 */
export function compilePattern(pattern: string): (type: string) => boolean {
  const source = pattern
    .split(/(\*\*|\*)/)
    .map((part) =>
      part === '**' ? '.*' : part === '*' ? '[^.]*' : part.replace(/[.+?^${}()|[\]\\-]/g, '\\$&'),
    )
    .join('');
  const regex = new RegExp(`^${source}$`);
  return (type) => regex.test(type);
}

export function endpointId(businessId: string, url: string): string {
  return createHash('sha256').update(`${businessId}\n${url}`).digest('hex').slice(0, 16);
}

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname.endsWith('.localhost');
}

/** Production rules that need no DNS: https only, unless the endpoint allows private networks. */
export function webhookProblems(config: SubscriptionSource): Array<Omit<ConfigProblem, 'file'>> {
  const problems: Array<Omit<ConfigProblem, 'file'>> = [];
  if (config.environment !== 'production') return problems;
  config.tenants.forEach((tenant, t) => {
    (tenant.webhooks ?? []).forEach((webhook, w) => {
      if (webhook.allowPrivateNetwork) return;
      const url = new URL(webhook.url);
      const field = `tenants[${t}].webhooks[${w}].url`;
      if (url.protocol !== 'https:')
        problems.push({
          field,
          message: 'Must be https in production (or set allowPrivateNetwork: true)',
        });
      else if (isLoopbackHost(url.hostname))
        problems.push({
          field,
          message: 'Loopback destination refused in production (or set allowPrivateNetwork: true)',
        });
      if (url.username || url.password)
        problems.push({
          field,
          message: 'Must not carry credentials; authenticity is the signature',
        });
    });
  });
  return problems;
}

function readSecret(ref: SecretReference, env: NodeJS.ProcessEnv, field: string): SigningKey {
  let text: string | undefined;
  let origin: string;
  if ('env' in ref) {
    origin = `environment variable ${ref.env}`;
    text = env[ref.env];
    if (!text) throw new ConfigError([{ file: origin, field, message: 'Not set' }]);
  } else {
    origin = ref.file;
    try {
      const exposed = exposedSecretFile(ref.file);
      if (exposed) throw new ConfigError([{ file: origin, field, message: exposed }]);
      text = readFileSync(ref.file, 'utf8').trim();
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      throw new ConfigError([{ file: origin, field, message: 'Cannot be read' }]);
    }
  }
  const key = parseSecret(text);
  // The message never echoes the value.
  if (!key)
    throw new ConfigError([
      { file: origin, field, message: 'Expected whsec_ followed by base64 (at least 24 bytes)' },
    ]);
  return key;
}

/** Resolves every secret once at start-up; a missing or malformed one stops start-up naming the field. */
export function resolveEndpoints(
  config: SubscriptionSource,
  env: NodeJS.ProcessEnv = process.env,
): ReadonlyMap<string, readonly Endpoint[]> {
  const byBusiness = new Map<string, Endpoint[]>();
  config.tenants.forEach((tenant, t) => {
    const endpoints: Endpoint[] = [];
    (tenant.webhooks ?? []).forEach((webhook, w) => {
      if (!webhook.enabled) return;
      const field = `tenants[${t}].webhooks[${w}].secret`;
      const refs = Array.isArray(webhook.secret) ? webhook.secret : [webhook.secret];
      const keys = refs.map((ref, i) =>
        readSecret(ref, env, refs.length > 1 ? `${field}[${i}]` : field),
      );
      const url = new URL(webhook.url);
      const matchers = webhook.events.map(compilePattern);
      endpoints.push({
        id: endpointId(tenant.businessId, webhook.url),
        businessId: tenant.businessId,
        url,
        host: url.host,
        keys,
        allowPrivateNetwork: webhook.allowPrivateNetwork || config.environment !== 'production',
        matches: (type) => matchers.some((match) => match(type)),
      });
    });
    byBusiness.set(tenant.businessId, endpoints);
  });
  return byBusiness;
}
