import { inject } from 'vitest';

/** The repository's root: the working directory of every CLI process a test starts. */
export const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * The CLI's entry file, compiled once per run by `test/setup/cli-build.ts` (a global setup of
 * every project whose tests start processes): `node <cliEntry()> <command> …` runs
 * `warehouse-ingest` as an operator would.
 */
export function cliEntry(): string {
  return inject('cliEntry');
}
