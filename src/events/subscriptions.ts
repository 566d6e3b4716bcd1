import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { ConfigError, type ConfigProblem } from '../operator-errors.js';
import { exposedSecretFile } from '../secret-files.js';
import type { OperatorWebhookConfig, SecretReference, WebhookConfig } from './config.js';
import { parseSecret, type SigningKey } from './destinations/webhook/sign.js';
import { assertPublicAddress } from './destinations/webhook/ssrf.js';
import { OPERATOR_BUSINESS } from './operator.js';

/** What subscriptions need of the configuration (structural, so config.ts can call in without a cycle). */
export interface SubscriptionSource {
  readonly environment: 'production' | 'development' | 'sandbox';
  readonly tenants: ReadonlyArray<{
    readonly businessId: string;
    readonly webhooks?: readonly WebhookConfig[] | undefined;
  }>;
  /** The operator webhook, resolved as the one endpoint of `OPERATOR_BUSINESS` (operator.ts). */
  readonly events?: { readonly operatorWebhook?: OperatorWebhookConfig | undefined };
}

/**
 * One webhook endpoint as configured: secrets resolved, patterns compiled; a `Destination` once
 * bound to the deliverer (destinations/webhook/index.ts). Never log it whole.
 */
export interface Endpoint {
  readonly kind: 'webhook';
  /** Stable across restarts and config reordering; carried in retry messages (no secret in it). */
  readonly id: string;
  /** How the history, `events status` and `events disable` name it (`webhookEndpointName`). */
  readonly name: string;
  readonly businessId: string;
  readonly url: URL;
  /** For logs and metrics: host[:port] only, never the path, query or credentials. */
  readonly host: string;
  readonly keys: readonly SigningKey[];
  readonly allowPrivateNetwork: boolean;
  /** The event type patterns as configured (`events`), shown to the business. */
  readonly patterns: readonly string[];
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

/**
 * What retry copies carry to name their endpoint: a hash of the business and the endpoint's
 * configured `id` (`id:<id>`), or its URL when it has none (a URL starts with a scheme, so the two
 * never meet).
 */
export function endpointId(businessId: string, identity: string): string {
  return createHash('sha256').update(`${businessId}\n${identity}`).digest('hex').slice(0, 16);
}

/** The id of a configured webhook (see `endpointId`). */
export function webhookEndpointId(
  businessId: string,
  webhook: Pick<WebhookConfig, 'id' | 'url'>,
): string {
  return endpointId(businessId, webhook.id ? `id:${webhook.id}` : webhook.url);
}

/**
 * How the history and an operator name a webhook: its configured `id`, or its full URL when it
 * has none (two endpoints on one host stay apart) without any user or password in it. A URL
 * holding a token in its path or query is kept so: give such an endpoint an `id`.
 */
export function webhookEndpointName(webhook: Pick<WebhookConfig, 'id' | 'url'>): string {
  if (webhook.id) return webhook.id;
  const url = new URL(webhook.url);
  if (!url.username && !url.password) return webhook.url; // as configured: `events recover` finds it so
  url.username = '';
  url.password = '';
  return url.href;
}

/**
 * How `events status` names a webhook: its configured id, or its place in the tenant's list,
 * with the host (never the path or query, which may hold a token) — four endpoints on one host
 * stay apart.
 */
export function endpointLabel(webhook: Pick<WebhookConfig, 'id' | 'url'>, index: number): string {
  return `${webhook.id ?? `webhooks[${index}]`} (${new URL(webhook.url).host})`;
}

/**
 * A destination lint can refuse without DNS: `localhost` and its subdomains (with or without the
 * root's trailing dot, which resolves the same), and IP literals in a range the runtime guard
 * refuses (destinations/webhook/ssrf.ts): loopback, private, link-local, metadata.
 */
function isRefusedWithoutDns(hostname: string): boolean {
  const host = hostname
    .toLowerCase()
    .replace(/\.+$/, '')
    .replace(/^\[(.*)\]$/, '$1');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 0) return false;
  try {
    assertPublicAddress(host, host);
    return false;
  } catch {
    return true;
  }
}

/** Production rules that need no DNS: https only, unless the endpoint allows private networks. */
export function webhookProblems(config: SubscriptionSource): Array<Omit<ConfigProblem, 'file'>> {
  const problems: Array<Omit<ConfigProblem, 'file'>> = [];
  if (config.environment !== 'production') return problems;
  const webhooks = config.tenants.flatMap((tenant, t) =>
    (tenant.webhooks ?? []).map((webhook, w) => ({ webhook, at: `tenants[${t}].webhooks[${w}]` })),
  );
  const operator = config.events?.operatorWebhook;
  if (operator) webhooks.push({ webhook: operator, at: 'events.operatorWebhook' });
  for (const { webhook, at } of webhooks) {
    if (webhook.allowPrivateNetwork) continue;
    const url = new URL(webhook.url);
    const field = `${at}.url`;
    if (url.protocol !== 'https:')
      problems.push({
        field,
        message: 'Must be https in production (or set allowPrivateNetwork: true)',
      });
    else if (isRefusedWithoutDns(url.hostname))
      problems.push({
        field,
        message:
          'Loopback or private destination refused in production (or set allowPrivateNetwork: true)',
      });
    if (url.username || url.password)
      problems.push({
        field,
        message: 'Must not carry credentials; authenticity is the signature',
      });
  }
  return problems;
}

/** Reads one secret, or records why not (naming tenant and endpoint, never the value). */
function readSecret(
  ref: SecretReference,
  env: NodeJS.ProcessEnv,
  field: string,
  about: string,
  problems: ConfigProblem[],
): SigningKey | undefined {
  let text: string | undefined;
  const origin = 'env' in ref ? `environment variable ${ref.env}` : ref.file;
  const problem = (message: string) => {
    problems.push({ file: origin, field, message: `${message} (${about})` });
    return undefined;
  };
  if ('env' in ref) {
    text = env[ref.env];
    if (!text) return problem('Not set');
  } else {
    let exposed: string | undefined;
    try {
      exposed = exposedSecretFile(ref.file);
      text = readFileSync(ref.file, 'utf8').trim();
    } catch {
      return problem('Cannot be read');
    }
    if (exposed) return problem(exposed);
  }
  // The message never echoes the value.
  return parseSecret(text) ?? problem('Expected whsec_ followed by base64 (at least 24 bytes)');
}

/**
 * Resolves every secret once at start-up (and in `lint`); missing or malformed ones stop it with
 * one `ConfigError` listing each, naming the field, the tenant and the endpoint's host.
 */
export function resolveEndpoints(
  config: SubscriptionSource,
  env: NodeJS.ProcessEnv = process.env,
): ReadonlyMap<string, readonly Endpoint[]> {
  const byBusiness = new Map<string, Endpoint[]>();
  const problems: ConfigProblem[] = [];
  config.tenants.forEach((tenant, t) => {
    const endpoints: Endpoint[] = [];
    (tenant.webhooks ?? []).forEach((webhook, w) => {
      if (!webhook.enabled) return;
      const field = `tenants[${t}].webhooks[${w}].secret`;
      const about = `tenant ${tenant.businessId}, endpoint ${new URL(webhook.url).host}`;
      const identity = webhookEndpointId(tenant.businessId, webhook);
      endpoints.push(
        resolveWebhook(
          tenant.businessId,
          identity,
          webhook,
          { field, about, env, problems },
          config,
        ),
      );
    });
    byBusiness.set(tenant.businessId, endpoints);
  });
  const operator = config.events?.operatorWebhook;
  if (operator) {
    // Known by a fixed id: retries waiting for it follow a change of its URL. Disabled, it has no
    // endpoint (its waiting retries are dead-lettered endpoint-removed, as a business's would be).
    const identity = endpointId(OPERATOR_BUSINESS, 'id:operator');
    const about = `operator webhook, endpoint ${new URL(operator.url).host}`;
    const place = { field: 'events.operatorWebhook.secret', about, env, problems };
    byBusiness.set(
      OPERATOR_BUSINESS,
      operator.enabled
        ? [resolveWebhook(OPERATOR_BUSINESS, identity, operator, place, config)]
        : [],
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return byBusiness;
}

/** One configured webhook as an endpoint; a secret that cannot be read is added to `problems`. */
function resolveWebhook(
  businessId: string,
  id: string,
  webhook: Omit<WebhookConfig, 'id'>,
  place: { field: string; about: string; env: NodeJS.ProcessEnv; problems: ConfigProblem[] },
  config: Pick<SubscriptionSource, 'environment'>,
): Endpoint {
  const { field, about, env, problems } = place;
  const refs = Array.isArray(webhook.secret) ? webhook.secret : [webhook.secret];
  const url = new URL(webhook.url);
  const keys = refs
    .map((ref, i) =>
      readSecret(ref, env, refs.length > 1 ? `${field}[${i}]` : field, about, problems),
    )
    .filter((key): key is SigningKey => key !== undefined);
  const matchers = webhook.events.map(compilePattern);
  return {
    kind: 'webhook',
    id,
    // The operator webhook has no `id` of its own: its URL names it.
    name: webhookEndpointName({
      url: webhook.url,
      ...('id' in webhook && { id: webhook.id as string | undefined }),
    }),
    businessId,
    url,
    host: url.host,
    keys,
    allowPrivateNetwork: webhook.allowPrivateNetwork || config.environment !== 'production',
    patterns: [...webhook.events],
    matches: (type) => matchers.some((match) => match(type)),
  };
}
