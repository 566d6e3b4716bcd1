import { resolveEndpoints } from './events/subscriptions.js';
import { readFileSync, statSync } from 'node:fs';
import { DEMO_API_KEY_HASH, tenantKeyHashes } from './api-keys.js';
import { configFilesOf, type Config } from './config.js';
import { openDrops, type OpenedDrop } from './drops/open.js';
import { embeddedAddonProblem } from './history/embedded/addon.js';
import { tlsProblems } from './http/tls-files.js';
import { ConfigError, type ConfigProblem } from './operator-errors.js';
import type { Logger } from './log.js';

/**
 * What `serve` checks and says before and after it starts: the checks that are about running
 * the service (not about the configuration's shape, which `loadConfig` owns), the pipelines
 * folder, the descriptor limit, and the one summary line an operator reads first.
 */

/**
 * The public demo credential (`DEMO:demo-api-key`, printed in the README) must never publish to a
 * real broker: anyone who read the README could send records into the warehouse. Refused rather
 * than dropped with a warning, because a warning scrolls by and the operator who set AMQP_URL
 * would then meet 401s without knowing why; a refusal says what to do.
 */
export function serveProblems(config: Readonly<Config>): ConfigProblem[] {
  if (!config.broker.url) return [];
  return config.tenants.flatMap((tenant, index) =>
    tenantKeyHashes(tenant).includes(DEMO_API_KEY_HASH)
      ? [
          {
            file: 'AMQP_URL (broker.url)',
            field: `tenants[${index}]`,
            message: `The public demo credential (${tenant.businessId}:demo-api-key) must not publish to a real broker. Configure your own tenants in $INGEST_CONFIG (tenants: [...] replaces the demo tenant; hash a key with "warehouse-ingest hash-key -"), or unset AMQP_URL to try the service with the embedded publisher.`,
          },
        ]
      : [],
  );
}

/**
 * The drops `serve` runs, after every check about running the service: what `serveProblems`
 * refuses, the TLS pair, and every pipeline's problems (schema, tenants, secrets) are thrown together in one
 * `ConfigError` with the webhook secrets' problems, so one run names them all.
 */
export function openCheckedDrops(config: Readonly<Config>): OpenedDrop[] {
  // The listener's certificate and key as serve reads them: lint passes no pair serve refuses.
  const problems = [
    ...serveProblems(config),
    ...tlsProblems(config.http.tls),
    ...historyAddonProblems(config),
  ];
  let drops: OpenedDrop[] = [];
  try {
    drops = openDrops(config);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }
  try {
    // Webhook secrets as the events consumer reads them: a missing or malformed one names tenant and endpoint.
    resolveEndpoints(config);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }
  if (problems.length > 0) {
    void Promise.all(drops.map(({ store }) => store.close().catch(() => undefined)));
    throw new ConfigError(problems);
  }
  return drops;
}

/**
 * The embedded history's native addon must load on this Node line: otherwise every history write
 * fails while the service runs (a release built on Node 20 run on Node 24), so `serve` refuses to
 * start and says what to do (issue 38, item 5). Not asked when the history is off or in PostgreSQL.
 */
export function historyAddonProblems(
  config: Pick<Config, 'history'>,
  problem: () => string | undefined = embeddedAddonProblem,
): ConfigProblem[] {
  if (!config.history.enabled || config.history.url !== undefined) return [];
  const message = problem();
  return message ? [{ file: 'history (embedded)', field: 'history.enabled', message }] : [];
}

export type FolderState = 'present' | 'missing' | 'not-a-folder';

/** Whether `pipelinesDirectory` is there: a missing one runs zero pipelines, which must not pass unsaid. */
export function pipelinesFolderState(config: Readonly<Config>): FolderState {
  try {
    return statSync(config.pipelinesDirectory).isDirectory() ? 'present' : 'not-a-folder';
  } catch {
    return 'missing';
  }
}

/** Warns when the pipelines folder is missing or no folder; `serve` still runs (HTTP alone is a valid service). */
export function warnAboutPipelinesFolder(config: Readonly<Config>, log: Logger): void {
  const state = pipelinesFolderState(config);
  if (state === 'present') return;
  log.warn(
    { pipelinesDirectory: config.pipelinesDirectory },
    `pipelinesDirectory ${config.pipelinesDirectory} ${state === 'missing' ? 'does not exist' : 'is not a folder'}: no drop pipelines run`,
  );
}

/** Descriptors the service needs beside its listeners' connections: broker, Redis, drops, files, the log. */
export const DESCRIPTORS_BESIDE_CONNECTIONS = 256;

/**
 * Warns when the listeners' bounds do not fit under the process's descriptor limit (`ulimit -n`):
 * a flood of connections would then take the last descriptor before `maxConnections` refuses
 * any, and the admin listener, the broker and the drops would fail with EMFILE.
 */
export function warnAboutDescriptorLimit(
  config: {
    readonly http: { readonly maxConnections: number };
    readonly admin: { readonly maxConnections: number };
  },
  log: Logger,
  openFiles: number | undefined = openFilesLimit(),
): void {
  const connections = config.http.maxConnections + config.admin.maxConnections;
  if (openFiles === undefined || connections + DESCRIPTORS_BESIDE_CONNECTIONS <= openFiles) return;
  log.warn(
    {
      openFilesLimit: openFiles,
      httpMaxConnections: config.http.maxConnections,
      adminMaxConnections: config.admin.maxConnections,
    },
    `the descriptor limit (${openFiles}, ulimit -n) leaves fewer than ${DESCRIPTORS_BESIDE_CONNECTIONS} descriptors beside http.maxConnections + admin.maxConnections (${connections}): raise it, or lower those`,
  );
}

/** The soft limit on open files (Linux: /proc/self/limits); undefined where unknown or unlimited. */
export function openFilesLimit(): number | undefined {
  try {
    const soft = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    const limit = Number(soft);
    return soft !== undefined && Number.isSafeInteger(limit) ? limit : undefined;
  } catch {
    return undefined;
  }
}

export interface StartedService {
  readonly config: Readonly<Config>;
  readonly publisher: { readonly name: string; readonly target: string };
  readonly pipelines: readonly string[];
  readonly url: string;
  readonly adminUrl: string;
}

/** The one start-up line: what runs, from which files and folders, where. */
export function logStarted(log: Logger, started: StartedService): void {
  const { config, publisher, pipelines, url, adminUrl } = started;
  const configFiles = configFilesOf(config);
  log.info(
    {
      url,
      adminUrl,
      environment: config.environment,
      configFiles,
      publisher: publisher.name,
      publisherTarget: publisher.target,
      pipelinesDirectory: config.pipelinesDirectory,
      pipelines,
    },
    `listening on ${url} (${config.environment}; admin ${adminUrl}; publisher ${publisher.name} ${publisher.target}; ${pipelines.length} pipeline(s) from ${config.pipelinesDirectory}; config ${configFiles.join(', ')})`,
  );
}
