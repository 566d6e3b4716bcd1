import type { H3Event } from 'h3';
import { NotImplemented } from '../errors.js';
import { convertLegacyJson, legacyCsvCandidates } from '../decode/legacy.js';
import type { RecordKind } from '../records/kind.js';
import {
  conversionContext,
  type LegacyConverter,
  type ProfilesSource,
} from '../records/legacy/index.js';
import { parseJson } from '../decode/json.js';
import { joinChunks, replay } from './body.js';
import { batchHandler, type HandlerDependencies } from './batch-endpoint.js';
import { requestContext } from './respond.js';

/**
 * The deprecated v1 endpoints (spec §4.3): older JSON shapes and CSV, converted to v2 and
 * handed to the same pipeline. Every v1 answer says it is deprecated (RFC 9745) and links
 * its v2 successor (RFC 8288), so a client can act on it.
 */
export const V1_DEPRECATED_SINCE = Date.UTC(2026, 0, 1) / 1000;

export function deprecationHeaders(successor: string): Record<string, string> {
  return {
    deprecation: `@${V1_DEPRECATED_SINCE}`,
    link: `<${successor}>; rel="successor-version"`,
  };
}

export interface V1Dependencies extends HandlerDependencies {
  /** Read once per batch: a configuration reload swaps them. */
  readonly onboarding: ProfilesSource;
}

/** POST /api/v1/<kind>: decode JSON or CSV, convert, hand to the pipeline. */
export function v1BatchHandler(kind: RecordKind, converter: LegacyConverter, deps: V1Dependencies) {
  return batchHandler(
    {
      kind,
      path: `/api/v1/${kind.name}`,
      api: 'v1',
      formats: ['json', 'csv'],
      headers: deprecationHeaders(`/api/v2/${kind.name}`),
      toBatch(format, chunks, businessId) {
        const context = conversionContext(
          deps.onboarding,
          businessId,
          kind.name,
          new Date().toISOString(),
        );
        const conversion = { converter, businessId, context };
        // CSV is kept as raw bytes (bounded by the body limit, far smaller than the records they
        // become) and decoded one record at a time; the valid ones wait in a spool, on disk once large.
        const converted =
          format === 'json'
            ? convertLegacyJson(parseJson(joinChunks(chunks)), conversion)
            : {
                mode: 'stream' as const,
                open: legacyCsvCandidates(replay(chunks), conversion),
                ...(deps.spoolFile && { spoolFile: deps.spoolFile() }),
              };
        // The spread last: see batchHandler (a literal that begins with one is slow in V8).
        return {
          volatilePaths: converter.receiptTimePaths,
          ...(context.ignored && { ignoredFields: context.ignored }),
          ...converted,
        };
      },
    },
    deps,
  );
}

/**
 * GET /api/v1/customer/{accountId}/stock: 501 until a stock source exists. The answer is the
 * same for every account id, so it reveals nothing about accounts of other businesses.
 */
export function stockHandler(deps: V1Dependencies) {
  return async (event: H3Event): Promise<Response> => {
    const context = requestContext(event, deps.log);
    await deps.admission.admit(event, context);
    throw new NotImplemented({
      detail:
        'The stock snapshot is not available: no stock source is connected to this service yet.',
    });
  };
}
