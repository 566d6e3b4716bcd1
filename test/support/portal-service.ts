import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { signLink } from '../../src/portal/links.js';
import { readPortalSecret } from '../../src/portal/secret.js';
import { LogCapture } from './http-app.js';
import { freePort } from './portal-browser.js';
import { freshDatabase } from './postgres.js';

/**
 * The service as the portal's browser tests run it: `serve` in development (the portal on by
 * default), the history on a PostgreSQL database of the test file's own, a port of its own (so
 * `portal-link` prints a reachable link), and the secret it made in its data folder.
 */
export interface PortalService {
  readonly service: RunningService;
  /** The service's environment, for `portal-link` and `loadConfig`. */
  readonly env: NodeJS.ProcessEnv;
  /** The development secret the service made: the one `portal-link` signs with. */
  readonly secret: Buffer;
  readonly logs: LogCapture;
  /** A sign-in link for the business, valid a minute. */
  link(businessId: string): string;
  stop(): Promise<void>;
}

export interface PortalServiceOptions {
  /** Names the database. */
  readonly label: string;
  /** A temporary folder: the configuration, `data/` and `pipelines/` go in it. */
  readonly dir: string;
  /** Configuration lines after the data and pipelines folders and the history. */
  readonly config?: readonly string[];
  /** More of the service's environment (`AMQP_URL`…). */
  readonly env?: NodeJS.ProcessEnv;
}

export async function startPortalService(options: PortalServiceOptions): Promise<PortalService> {
  const database = await freshDatabase(options.label);
  const logs = new LogCapture();
  try {
    mkdirSync(path.join(options.dir, 'pipelines'), { recursive: true });
    const config = path.join(options.dir, 'config.yaml');
    writeFileSync(
      config,
      [
        `dataDirectory: ${options.dir}/data`,
        `pipelinesDirectory: ${options.dir}/pipelines`,
        'history: { enabled: true, flushMs: 10 }',
        ...(options.config ?? []),
        '',
      ].join('\n'),
      // Owner-only, as a configuration holding key hashes must be.
      { mode: 0o600 },
    );
    const env = {
      INGEST_CONFIG: config,
      INGEST_ENV: 'development',
      HISTORY_URL: database.url,
      PORT: String(await freePort()),
      ADMIN_PORT: '0',
      ...options.env,
    };
    const service = await startService({ env, log: createLogger({ destination: logs }) });
    const secret = readPortalSecret(loadConfig({ env }));
    return {
      service,
      env,
      secret,
      logs,
      link: (businessId) =>
        `${service.url}/portal/login?token=${signLink(secret, businessId, Date.now() + 60_000)}`,
      async stop() {
        await service.stop();
        await database.drop();
      },
    };
  } catch (error) {
    await database.drop();
    throw error;
  }
}
