import type { DropStore } from '../../../stores/store.js';
import type { AttemptResult, Destination } from '../destination.js';
import {
  outboundFileContent,
  outboundFileName,
  writeOutboundFile,
  type OutboundFilesSpec,
} from './format.js';
import { compilePattern, endpointId } from '../../subscriptions.js';

/** What a pipeline with outbound files brings: its name, business, `events` section and store. */
export interface OutboundDrop {
  readonly pipeline: {
    readonly name: string;
    readonly businessId: string;
    readonly events?: (OutboundFilesSpec & { readonly types: readonly string[] }) | undefined;
  };
  readonly store: DropStore;
}

/** The id an outbound folder carries in retry messages (no path in it: pipelines are renamed rarely, moved often). */
export const fileDestinationId = (businessId: string, pipeline: string) =>
  endpointId(businessId, `file:${pipeline}`);

/** Rejects after `ms` unless `work` settles first (the write itself goes on; its name makes it harmless). */
function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Not written within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * One destination per pipeline that declares `events`: an attempt writes the event's file in the
 * partner's drop through the pipeline's own store. A store outage, a refused write or a time-out
 * is a failed attempt, retried on the broker like a webhook's; a name already there is delivered.
 */
export function fileDestination(drop: OutboundDrop, timeoutMs: number): Destination | undefined {
  const spec = drop.pipeline.events;
  if (!spec) return undefined;
  const matchers = spec.types.map(compilePattern);
  return {
    kind: 'file',
    id: fileDestinationId(drop.pipeline.businessId, drop.pipeline.name),
    businessId: drop.pipeline.businessId,
    host: `${drop.store.type}:${drop.store.where.replace(/\/+$/, '')}/${spec.path}`,
    matches: (type) => matchers.some((match) => match(type)),
    async attempt(event): Promise<AttemptResult> {
      try {
        const outcome = await within(
          writeOutboundFile(
            drop.store,
            outboundFileName(event, spec),
            outboundFileContent(event, spec),
          ),
          timeoutMs,
        );
        return { outcome: 'delivered', file: outcome };
      } catch (error) {
        // Store errors name the store, operation and key, never credentials (src/stores/).
        const reason = (error as Error).message.replace(/\s+/g, ' ').slice(0, 300);
        return { outcome: 'failed', reason: `File not written: ${reason}` };
      }
    },
  };
}

/** The outbound folders of every pipeline that declares `events`. */
export function fileDestinations(drops: readonly OutboundDrop[], timeoutMs: number): Destination[] {
  return drops
    .map((drop) => fileDestination(drop, timeoutMs))
    .filter((file): file is Destination => file !== undefined);
}
