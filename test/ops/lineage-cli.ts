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
