import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { historyStore, historyWhere } from '../history/index.js';
import { createLogger } from '../log.js';
import { ConfigError } from '../operator-errors.js';
import { CannotRead, parse, type Output } from './check-commands.js';

/**
 * `migrate`: applies the history's migrations now, with the credentials this command is given
 * (`HISTORY_URL` of a role that may CREATE), so the service's own role needs none: the first
 * write of `serve` or `run` then finds the schema current and creates nothing. Without it, that
 * first write applies them itself. Whatever `history.enabled` says: an operator prepares the
 * store before turning it on. Exit 0 migrated (or already current), 2 configuration or the
 * store could not be migrated (said on stderr, without credentials).
 */
export async function migrateCommand(args: string[], io: Output): Promise<number> {
  parse('migrate', () => parseArgs({ args, options: {}, allowPositionals: false, strict: true }));
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
  if (config.environment === 'sandbox') {
    io.err('warehouse-ingest: the sandbox keeps no history: nothing to migrate\n');
    return 2;
  }
  const store = historyStore(config, createLogger({ level: 'silent' }));
  const where = historyWhere(config);
  try {
    await store.open();
    io.out(`history (${store.name}, ${where}): migrations applied, the schema is current\n`);
    return 0;
  } catch (error) {
    io.err(
      `warehouse-ingest: the history (${store.name}, ${where}) could not be migrated: ${(error as Error).message}\n`,
    );
    return 2;
  } finally {
    await store.close().catch(() => undefined);
  }
}
