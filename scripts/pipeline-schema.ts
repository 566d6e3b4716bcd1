// Regenerates pipelines/pipeline.schema.json from the zod schema (npm run pipeline-schema).
import { writeFileSync } from 'node:fs';
import { pipelineJsonSchema } from '../src/drops/definition.js';

writeFileSync(
  new URL('../pipelines/pipeline.schema.json', import.meta.url),
  `${JSON.stringify(pipelineJsonSchema(), null, 2)}\n`,
);
