import type { Logger } from '../../../log.js';
import type { DropStore } from '../../../stores/store.js';
import { type AttemptResult, type Destination, targetOf } from '../destination.js';
import {
  outboundFileContent,
  outboundFileName,
  sweepOutboundStaging,
  writeOutboundFile,
  type OutboundFilesSpec,
} from './format.js';
import { compilePattern, endpointId } from '../../subscriptions.js';
import { writeX12Event, x12EventTypes } from './x12.js';

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

/** How often an outbound folder's staging area is swept of killed writers' leftovers. */
const SWEEP_EVERY_MS = 3_600_000;

/**
 * Sweeps the staging area of an outbound folder at the first event written after start-up, and
 * then at most hourly: a worker killed while staging leaves a temporary file nothing else
 * removes. Not when the destination is made: a folder no event reaches needs no sweep, and a
 * remote store is not connected to for nothing. In the background, never delaying or failing a
 * delivery; a failed sweep waits for the next.
 */
function stagingSweeper(drop: OutboundDrop, log: Logger | undefined): () => void {
  let sweptAt = -Infinity;
  const spec = drop.pipeline.events!;
  return () => {
    if (!drop.store.atomicRename || Date.now() - sweptAt < SWEEP_EVERY_MS) return;
    sweptAt = Date.now();
    void sweepOutboundStaging(drop.store, spec).then(
      (removed) => {
        if (removed.length > 0)
          log?.info(
            { pipeline: drop.pipeline.name, removed: removed.length, files: removed.slice(0, 10) },
            'outbound files: removed staging files that killed writers left behind',
          );
      },
      (error: unknown) =>
        log?.debug(
          { pipeline: drop.pipeline.name, reason: (error as Error).message },
          'outbound files: could not sweep the staging folder; trying at the next sweep',
        ),
    );
  };
}

/**
 * One destination per pipeline that declares `events`: an attempt writes the event's file in the
 * partner's drop through the pipeline's own store. A store outage, a refused write or a time-out
 * is a failed attempt, retried on the broker like a webhook's; a name already there is delivered.
 */
export function fileDestination(
  drop: OutboundDrop,
  timeoutMs: number,
  log?: Logger,
): Destination | undefined {
  const spec = drop.pipeline.events;
  if (!spec) return undefined;
  const matchers = spec.types.map(compilePattern);
  // An X12 folder writes the event types that have a transaction set (945, 944) only.
  const writable = (type: string) => spec.format !== 'x12' || x12EventTypes().includes(type);
  const sweep = stagingSweeper(drop, log);
  const where = `${drop.store.type}:${drop.store.where.replace(/\/+$/, '')}/${spec.path}`;
  return {
    kind: 'file',
    id: fileDestinationId(drop.pipeline.businessId, drop.pipeline.name),
    name: `file:${drop.pipeline.name}`,
    businessId: drop.pipeline.businessId,
    host: where,
    target: targetOf(where),
    matches: (type) => writable(type) && matchers.some((match) => match(type)),
    async attempt(event): Promise<AttemptResult> {
      sweep();
      try {
        const name = outboundFileName(event, spec);
        const outcome = await within(
          spec.format === 'x12' && spec.x12
            ? writeX12Event(drop.store, name, event, spec.x12)
            : writeOutboundFile(drop.store, name, outboundFileContent(event, spec)),
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
export function fileDestinations(
  drops: readonly OutboundDrop[],
  timeoutMs: number,
  log?: Logger,
): Destination[] {
  return drops
    .map((drop) => fileDestination(drop, timeoutMs, log))
    .filter((file): file is Destination => file !== undefined);
}
