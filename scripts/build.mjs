#!/usr/bin/env node
// Compiles src/ to dist/ with the project's TypeScript (a dev dependency).
//   node scripts/build.mjs            clean dist/ and compile (npm run build)
//   node scripts/build.mjs --if-stale compile only when dist/ is missing or older than the
//                                     sources (npm start's prestart): a fresh clone after
//                                     `npm ci` builds once; a production install (no TypeScript)
//                                     runs the dist/ it has, or says how to get one.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const entry = path.join(root, 'dist', 'cli.js');

function newest(target) {
  const stat = statSync(target);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = 0;
  for (const name of readdirSync(target))
    latest = Math.max(latest, newest(path.join(target, name)));
  return latest;
}

function compiler() {
  try {
    return createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    return undefined;
  }
}

const ifStale = process.argv.includes('--if-stale');
const tsc = compiler();
if (ifStale) {
  const sources = ['src', 'tsconfig.json', 'tsconfig.build.json'].map((f) => path.join(root, f));
  const built = existsSync(entry) ? statSync(entry).mtimeMs : 0;
  const stale = built === 0 || sources.some((f) => existsSync(f) && newest(f) > built);
  if (!stale) process.exit(0);
  if (!tsc) {
    if (built > 0) {
      console.error(
        'build: dist/ is older than src/, but TypeScript is not installed; running dist/ as it is',
      );
      process.exit(0);
    }
    console.error(
      'build: no dist/ to run and no TypeScript to build it (dev dependencies omitted?).\n' +
        '  Either `npm ci` (with dev dependencies) then `npm start`, or run the release folder\n' +
        '  made by `npm run release` (see docs/operations-startup.md).',
    );
    process.exit(1);
  }
}
if (!tsc) {
  console.error('build: TypeScript is not installed: run `npm ci` with dev dependencies first');
  process.exit(1);
}
rmSync(path.join(root, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
  cwd: root,
});
