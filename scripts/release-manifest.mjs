#!/usr/bin/env node
// Writes the release folder's package.json and package-lock.json: the project's, with the
// production dependencies only, so `npm ci --omit=dev` there installs exactly the locked
// versions (same integrity hashes) and nothing a developer needs. Usage: release-manifest.mjs <dir>
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const out = process.argv[2];
if (!out) {
  console.error('usage: release-manifest.mjs <release folder>');
  process.exit(2);
}
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));

const manifest = {
  name: pkg.name,
  version: pkg.version,
  description: pkg.description,
  license: pkg.license,
  private: true,
  type: pkg.type,
  engines: pkg.engines,
  bin: pkg.bin,
  // The release is already built: start runs it (with the project's runtime flags), nothing compiles.
  scripts: { start: pkg.scripts.start },
  dependencies: pkg.dependencies,
  ...(pkg.allowScripts ? { allowScripts: pkg.allowScripts } : {}),
};

const packages = {};
for (const [where, entry] of Object.entries(lock.packages)) {
  if (where === '') {
    const { devDependencies: _dev, ...rootEntry } = entry;
    packages[where] = rootEntry;
    continue;
  }
  if (entry.dev === true) continue; // needed only by devDependencies
  packages[where] = entry;
}
writeFileSync(path.join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
writeFileSync(
  path.join(out, 'package-lock.json'),
  `${JSON.stringify({ ...lock, packages }, null, 2)}\n`,
);
