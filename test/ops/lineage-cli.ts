import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { expect } from 'vitest';

const exec = promisify(execFile);
const ROOT = new URL('../..', import.meta.url).pathname;

/** `warehouse-ingest lineage …` as a separate process, as an operator runs it (via tsx, no build). */
export async function lineage(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'lineage', ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    timeout: 30_000,
  }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

/** The JSON lines `lineage --json` printed. */
export const jsonLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** Waits until the journal file of today holds `text` (the journal writes behind the 202). */
export async function journalHolds(file: string, text: string): Promise<void> {
  await expect.poll(() => {
    try {
      return readFileSync(file, 'utf8').includes(text);
    } catch {
      return false;
    }
  }).toBe(true);
}
