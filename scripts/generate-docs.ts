// Regenerates the files derived from the zod schemas (npm run docs:generate): the pipeline and
// config JSON Schemas, docs/configuration.md, and the event catalog (docs/event-catalog.md and
// docs/events/schemas/). test/docs/generated.test.ts checks they are current.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedFiles } from './docs/generate.js';

const root = fileURLToPath(new URL('../', import.meta.url));
for (const file of generatedFiles()) {
  const target = path.join(root, file.path);
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, file.content);
  console.log(`wrote ${file.path}`);
}
