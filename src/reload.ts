import { tenantKeyHashes } from './api-keys.js';
import type { Config } from './config.js';
import { ConfigError, type ConfigProblem } from './operator-errors.js';
import type { Logger } from './log.js';

/**
 * Reloading the configuration on SIGHUP (spec §5.6: rotating a key must not be an outage).
 * What a reload changes: tenants (who may log in, with which keys), onboarding profiles,
 * webhook subscriptions and the portal's operators. Everything else (listeners, broker, pipelines, limits) is read at
 * start-up only; a reload that changes it says so and leaves it as it is.
 *
 * A reload is all or nothing: the files are read and checked as at start-up, every part
 * prepares its new state (which may fail: a webhook secret file that cannot be read), and only
 * then every part swaps, synchronously — no request sees half of it. Work in flight keeps what
 * it began with. A refused reload keeps the running configuration and logs why, naming file
 * and field.
 */

/** The configuration sections a reload swaps; the rest need a restart. */
export const RELOADED = ['tenants', 'onboarding'] as const;

export interface ReloadPart {
  readonly name: string;
  /** Builds the part's new state; may throw (nothing has changed yet). Returns the swap, which must not throw. */
  prepare(next: Readonly<Config>): () => void;
}

export interface ReloaderOptions {
  readonly config: Readonly<Config>;
  /** Reads and checks the configuration as start-up does; throws `ConfigError`. */
  readonly load: () => Readonly<Config>;
  /** Start-up's own refusals beyond the configuration's shape (e.g. the demo key with a broker). */
  readonly check?: (config: Readonly<Config>) => ConfigProblem[];
  readonly parts: readonly ReloadPart[];
  readonly log: Logger;
}

export interface Reloader {
  /** The configuration in force: the start-up one, or the last reload's. */
  current(): Readonly<Config>;
  /** Reads the configuration again and swaps it in; false (and an error logged) when refused. */
  reload(): boolean;
}

export function createReloader(options: ReloaderOptions): Reloader {
  const { load, check, parts, log } = options;
  let current = options.config;
  return {
    current: () => current,
    reload() {
      let next: Readonly<Config>;
      let swaps: Array<() => void>;
      try {
        next = load();
        const refused = check?.(next) ?? [];
        if (refused.length > 0) throw new ConfigError(refused);
        swaps = parts.map((part) => part.prepare(next));
      } catch (error) {
        log.error(
          error instanceof ConfigError
            ? { problems: error.problems }
            : { error: error instanceof Error ? error.message : String(error) },
          'configuration reload refused: the running configuration is kept',
        );
        return false;
      }
      for (const swap of swaps) swap();
      const changes = changesBetween(current, next);
      current = next;
      log.info(changes, 'configuration reloaded');
      if (changes.restartNeeded.length > 0)
        log.warn(
          { restartNeeded: changes.restartNeeded },
          'configuration reload: these sections changed and are read only at start-up; restart to apply them',
        );
      return true;
    },
  };
}

/** What a reload changed, for the log: counts and business ids, never a key hash or a secret. */
export function changesBetween(before: Readonly<Config>, after: Readonly<Config>) {
  const keys = (config: Readonly<Config>) =>
    new Map(config.tenants.map((t) => [t.businessId, tenantKeyHashes(t).join('\n')]));
  const was = keys(before);
  const now = keys(after);
  const webhooks = (config: Readonly<Config>) =>
    config.tenants.reduce((sum, tenant) => sum + (tenant.webhooks?.length ?? 0), 0);
  const webhooksOf = (config: Readonly<Config>, id: string) =>
    JSON.stringify(config.tenants.find((t) => t.businessId === id)?.webhooks ?? []);
  const profiles = (config: Readonly<Config>) => Object.keys(config.onboarding);
  const sections = Object.keys({ ...before, ...after }) as Array<keyof Config>;
  return {
    tenants: {
      count: now.size,
      added: [...now.keys()].filter((id) => !was.has(id)),
      removed: [...was.keys()].filter((id) => !now.has(id)),
      keysChanged: [...now.keys()].filter((id) => was.has(id) && was.get(id) !== now.get(id)),
      keys: after.tenants.reduce((sum, tenant) => sum + tenantKeyHashes(tenant).length, 0),
    },
    onboarding: {
      profiles: profiles(after).length,
      changed: [...new Set([...profiles(before), ...profiles(after)])].filter(
        (id) => JSON.stringify(before.onboarding[id]) !== JSON.stringify(after.onboarding[id]),
      ),
    },
    webhooks: {
      count: webhooks(after),
      changed: [...now.keys()].filter((id) => webhooksOf(before, id) !== webhooksOf(after, id)),
    },
    restartNeeded: sections.filter(
      (section) =>
        !(RELOADED as readonly string[]).includes(section) &&
        JSON.stringify(restartOnly(before, section)) !==
          JSON.stringify(restartOnly(after, section)),
    ),
  };
}

/** A section's settings that only a restart applies: the portal's operators are reloaded. */
function restartOnly(config: Readonly<Config>, section: keyof Config): unknown {
  return section === 'portal' ? { ...config.portal, operators: [] } : config[section];
}
