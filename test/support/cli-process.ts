import { execFile } from 'node:child_process';
import { cliEntry, ROOT } from './cli-entry.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `warehouse-ingest <args>` as a separate process, as an operator or cron runs it (the run's
 * compiled CLI, `cli-entry.ts`). Resolves with the exit code and output whatever the code; `input` goes to stdin.
 */
export function runCli(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [cliEntry(), ...args],
      {
        cwd: ROOT,
        env: { ...process.env, LOG_LEVEL: 'warn', ...options.env },
        timeout: options.timeoutMs ?? 60_000,
      },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
          stdout,
          stderr,
        }),
    );
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}
