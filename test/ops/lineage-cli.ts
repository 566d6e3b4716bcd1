import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { runCli, type CliResult } from '../support/cli-process.js';

/** `warehouse-ingest lineage …` as a separate process, as an operator runs it. */
export const lineage = (args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> =>
  runCli(['lineage', ...args], { env, timeoutMs: 30_000 });

/** The JSON lines `lineage --json` printed. */
export const jsonLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** Waits until the journal file of today holds `text` (the journal writes behind the 202). */
export async function journalHolds(file: string, text: string): Promise<void> {
  await expect
    .poll(() => {
      try {
        return readFileSync(file, 'utf8').includes(text);
      } catch {
        return false;
      }
    })
    .toBe(true);
}
