import { parseJsonArray } from '../decode/json.js';
import type { RecordKind } from '../records/kind.js';
import { joinChunks } from './body.js';
import { batchHandler, type HandlerDependencies } from './batch-endpoint.js';

export type { HandlerDependencies } from './batch-endpoint.js';

/** POST /api/v2/<kind>: a JSON array of v2 records, handed to the pipeline as it is. */
export function v2BatchHandler(kind: RecordKind, deps: HandlerDependencies) {
  return batchHandler(
    {
      kind,
      path: `/api/v2/${kind.name}`,
      formats: ['json'],
      headers: {},
      toBatch: (_format, chunks) => ({
        mode: 'array',
        records: parseJsonArray(joinChunks(chunks)),
      }),
    },
    deps,
  );
}
