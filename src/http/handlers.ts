import type { H3Event } from 'h3';
import type { Ingest } from '../pipeline/ingest.js';
import type { RecordKind } from '../records/kind.js';
import type { Authenticator } from './auth.js';
import { parseJsonArray } from '../decode/json.js';
import { bodyFormat, readBodyBytes } from './body.js';
import { jsonResponse, requestContext } from './respond.js';
import type { Logger } from '../log.js';

export interface HandlerDependencies {
  readonly ingest: Ingest;
  readonly authenticator: Authenticator;
  readonly log: Logger;
  readonly bodyLimitBytes: number;
  readonly maxRecordsPerBatch: number;
  /** Headers on every response, e.g. the sandbox marker. */
  readonly responseHeaders: Record<string, string>;
}

/** POST /api/v2/<kind>: authenticate, read, hand the batch to the pipeline, answer. */
export function v2BatchHandler(kind: RecordKind, deps: HandlerDependencies) {
  const path = `/api/v2/${kind.name}`;
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    const businessId = await deps.authenticator.authenticate(event.req.headers.get('authorization'));
    context.businessId = businessId;
    context.kind = kind.name;
    bodyFormat(event, ['json']);
    const records = parseJsonArray(await readBodyBytes(event, deps.bodyLimitBytes));
    const accepted = await deps.ingest({
      kind,
      businessId,
      records,
      correlationId: context.correlationId,
      maxRecords: deps.maxRecordsPerBatch,
      source: { type: 'http', name: path },
      log: context.log,
    });
    return jsonResponse(202, accepted, context, deps.responseHeaders);
  };
}
