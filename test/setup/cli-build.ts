import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';

const ROOT = path.resolve(import.meta.dirname, '../..');

declare module 'vitest' {
  export interface ProvidedContext {
    /** The CLI's entry file as the tests start it as a process (`test/support/cli-entry.ts`). */
    cliEntry: string;
  }
}

/**
 * The CLI as JavaScript, once per run, for the tests that start it as a process (commands,
 * workers, `serve`). Through tsx every start compiled the sources again: about 1.1 s of CPU
 * against 0.4, and the suite starts the CLI over a hundred times. esbuild (tsx's own compiler)
 * transpiles file by file, as tsc does for `dist/`, into a folder beside `src/` — one level
 * below the root, so the sources' relative paths (`../config/`, `../../fixtures/`) still resolve —
 * named for this run, so that two runs in one checkout never share it.
 */
export default async function buildCli(project: TestProject): Promise<() => void> {
  const out = path.join(ROOT, `.test-cli-${process.pid}`);
  const entryPoints = readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(ROOT, 'src', file));
  await build({
    entryPoints,
    outdir: out,
    outbase: path.join(ROOT, 'src'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
  project.provide('cliEntry', path.join(out, 'cli.js'));
  return () => rmSync(out, { recursive: true, force: true });
}
