import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { ConfigError } from '../operator-errors.js';
import { portalBaseUrl, preparePortal } from '../portal/index.js';
import { linkUrl, signLink } from '../portal/links.js';
import { CannotRead, type Output, parse } from './check-commands.js';
import { UsageError } from './help.js';

/**
 * `portal-link --business <id> [--ttl <duration>]`: prints a single-use sign-in link to the
 * portal for one business, signed with the service's portal secret (so run it where the service's
 * configuration and secret are). The link is given to the business's people out of band.
 */
const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `15m`, `1h`, `1d`, or milliseconds as a bare number. */
export function parseTtl(text: string): number | undefined {
  const match = /^(\d+)(s|m|h|d)?$/.exec(text.trim());
  if (!match) return undefined;
  return Number(match[1]) * (match[2] ? UNITS[match[2]]! : 1);
}

export async function portalLinkCommand(args: string[], io: Output): Promise<number> {
  const { values } = parse('portal-link', () =>
    parseArgs({
      args,
      options: { business: { type: 'string' }, ttl: { type: 'string' } },
      strict: true,
    }),
  );
  const businessId = values.business;
  if (!businessId) throw new UsageError('portal-link needs --business <id>', 'portal-link');
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig({ brokerRequired: false });
  } catch (error) {
    if (error instanceof ConfigError)
      throw new CannotRead(
        `invalid configuration (run "warehouse-ingest lint"):\n${error.message}`,
      );
    throw error;
  }
  const ttlMs = values.ttl === undefined ? 3_600_000 : parseTtl(values.ttl);
  if (ttlMs === undefined || ttlMs < 1000)
    throw new UsageError('--ttl must be a duration such as 15m, 1h or 1d', 'portal-link');
  const { maxLinkTtlMs } = config.portal;
  if (ttlMs > maxLinkTtlMs) {
    io.err(
      `warehouse-ingest: --ttl ${values.ttl} is longer than portal.maxLinkTtlMs (${maxLinkTtlMs} ms)\n`,
    );
    return 1;
  }
  // A link for a business that cannot send anything would open an empty portal: refused.
  const known = config.tenants.some((tenant) => tenant.businessId === businessId);
  if (!known && config.environment !== 'sandbox') {
    io.err(`warehouse-ingest: no tenant has business id ${JSON.stringify(businessId)}\n`);
    return 1;
  }
  const portal = preparePortal(config);
  if (!portal) {
    io.err(
      'warehouse-ingest: the portal is not enabled here (portal.enabled is false); a link would open nothing\n',
    );
    return 1;
  }
  const token = signLink(portal.secret, businessId, Date.now() + ttlMs);
  io.out(`${linkUrl(portalBaseUrl(config), token)}\n`);
  return 0;
}
