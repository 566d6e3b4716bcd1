import type { PortalConfig } from '../config/portal-schema.js';
import { type PortalSecretSource, readPortalSecret } from './secret.js';

/**
 * The portal as configured: what `serve` needs to mount it (routes.ts) and what `portal-link`
 * needs to sign a link for it — the same secret and the same public address for both.
 */
export interface PortalSource extends PortalSecretSource {
  readonly portal: Omit<PortalConfig, 'signInLimits'>;
  readonly http: {
    readonly host: string;
    readonly port: number;
    readonly publicUrls: readonly string[];
    readonly tls?: unknown;
  };
}

export interface PreparedPortal {
  readonly secret: Buffer;
  readonly secureCookie: boolean;
  readonly publicOrigins: readonly string[];
}

/**
 * Reads the secret (a `ConfigError` naming `portal.secret` when it cannot); undefined when the
 * portal is off. Called before anything connects, like every other secret; its sessions are
 * kept in the shared state, opened later (sessions.ts).
 */
export function preparePortal(
  config: PortalSource,
  env: NodeJS.ProcessEnv = process.env,
): PreparedPortal | undefined {
  if (!config.portal.enabled) return undefined;
  const base = portalBaseUrl(config);
  return {
    secret: readPortalSecret(config, env),
    // Over https the cookie never travels in clear; over plain http (development) it could not be set at all.
    secureCookie: config.http.tls !== undefined || base.startsWith('https:'),
    publicOrigins: config.http.publicUrls.map((url) => new URL(url).origin),
  };
}

/** Where partners reach the service: the first public URL, else the listener's own address. */
export function portalBaseUrl(config: PortalSource): string {
  const [first] = config.http.publicUrls;
  if (first) return first;
  const { host, port } = config.http;
  const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const shown = reachable.includes(':') ? `[${reachable}]` : reachable;
  return `${config.http.tls === undefined ? 'http' : 'https'}://${shown}:${port}`;
}
