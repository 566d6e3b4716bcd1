import path from 'node:path';
import { decodeFile } from '../../decode/file.js';
import { receivedBefore } from '../../decode/x12/ledger.js';
import { asLocalResourceError, Interrupted } from '../../errors.js';
import { lineageName, openLineageFile, type LineageFile } from '../../lineage/drop-file.js';
import type { ConfirmedRecords } from '../../ingest/batch.js';
import type { AcceptedSummary, InputState } from '../state/input-state.js';
import { KINDS } from '../../records/index.js';
import { conversionContext, LEGACY } from '../../records/legacy/index.js';
import { lost, lostToAnother, type FileTry, type TryContext } from './context.js';
import { openIdFile, type IdFile } from '../receipts.js';
import { interrupted, progressed, published, validated } from '../state/machine.js';
import { idsName } from '../state/persist.js';
import { mappedFormatOf } from '../definition-mapped.js';

/**
 * How publishing a file ended: `published` (every record confirmed, ids and state written),
 * `interrupted` (a stop; progress recorded where the drop allowed), `lost` (another worker has
 * the file now), or `failed` with the error and the state the try had reached.
 */
export type PublishEnd =
  | { readonly end: 'published'; readonly state: InputState; readonly summary: AcceptedSummary }
  | { readonly end: 'interrupted' }
  | { readonly end: 'lost' }
  | { readonly end: 'failed'; readonly state: InputState; readonly error: unknown };

/**
 * Decodes the spooled file and ingests it (validate everything, then publish with confirms),
 * recording `validated`, then the resume point after every confirmed chunk, then `published`.
 * A try following one that confirmed part of the file (a stop, a crash, an outage, an error)
 * publishes only the records after its resume point, under the same correlation id. Before each
 * chunk the try checks that the file is still this worker's; `ClaimLost` or `StaleState` (the
 * state moved on under it) end the try where it is, for the caller to abandon.
 */
/**
 * The try's spooled copy of the file, decoded as its pipeline says (format, kind, business,
 * onboarding profile), with the conversion context it was decoded in.
 */
export async function decodeDroppedFile(ctx: TryContext, tr: FileTry, halvesFromBytes: number) {
  const { pipeline } = ctx;
  const kind = KINDS[pipeline.kind];
  const context = conversionContext(ctx.onboarding, pipeline.businessId, kind.name, tr.receivedAt);
  const records = await decodeFile(tr.spooled.path, {
    kind,
    format: pipeline.format,
    businessId: pipeline.businessId,
    context,
    maxJsonBytes: ctx.maxJsonBytes,
    halvesFromBytes,
    mapped: mappedFormatOf(pipeline),
    // X12: the same sender's control number accepted before is a duplicate (the drop's ledger).
    earlierInterchange: (interchange) =>
      receivedBefore(ctx.store, interchange.sender, interchange.control),
  });
  return { records, context };
}

export async function publishFile(
  ctx: TryContext,
  tr: FileTry,
  begun: InputState,
  correlationId: string,
): Promise<PublishEnd> {
  const { pipeline } = ctx;
  const kind = KINDS[pipeline.kind];
  let state = begun;
  let resumeAfter = 0;
  let idFile: IdFile | undefined;
  let lineage: LineageFile | undefined;
  try {
    const { records, context } = await decodeDroppedFile(ctx, tr, ctx.halvesFromBytes);
    if (lost(ctx, tr.held)) return { end: 'lost' };
    if (state.resume && records.mode === 'stream') {
      resumeAfter = state.resume.confirmed;
      tr.log.info(
        { confirmed: resumeAfter },
        'resuming the file after the records an earlier try had confirmed: they are not published again',
      );
    }
    const ids = openIdFile(tr.local.ids, { append: false });
    idFile = ids;
    const lineageFile = openLineageFile(
      tr.local.lineage,
      {
        pipeline: pipeline.name,
        businessId: pipeline.businessId,
        kind: kind.name,
        file: tr.held.name,
        sha256: tr.spooled.sha256,
      },
      { append: false },
    );
    lineage = lineageFile;
    let confirmed = resumeAfter;
    // Each confirmed chunk's ids and lineage into the try's files (an array batch's at once).
    const keep = async (chunk: ConfirmedRecords) => {
      await ids.append(chunk.messageIds);
      await lineageFile.append(chunk);
    };
    const body =
      records.mode === 'stream'
        ? {
            ...records,
            onSkipped: keep,
            onConfirmed: async (chunk: ConfirmedRecords) => {
              await keep(chunk);
              confirmed += chunk.messageIds.length;
              // The resume point, so that no failure of this try sends these records again.
              state = await ctx.save(progressed(state, { confirmed, correlationId }));
            },
            beforeChunk: tr.verifyHeld,
            // Beside the try's other scratch files: removed with them, also after a crash.
            spoolFile: path.join(tr.work, 'messages.spool'),
            signal: ctx.signal,
            resumeAfter,
          }
        : { ...records, onConfirmed: keep };
    const response = await ctx.ingest({
      kind,
      businessId: pipeline.businessId,
      ...body,
      onValidated: async () => {
        state = await ctx.save(validated(state));
      },
      correlationId,
      // The file's batch, under its correlation id (kept by a resumed try, so its records and
      // those of the tries before it are one batch); it ends when a try settles it (settle.ts).
      batchId: correlationId,
      endedBySource: true,
      ...(tr.trace && { trace: tr.trace }),
      source: { type: ctx.store.type, name: pipeline.name },
      log: tr.log.child({ correlationId }),
      maxRecords: ctx.maxRecords,
      volatilePaths: pipeline.format.startsWith('v1-') ? LEGACY[kind.name]?.receiptTimePaths : [],
      ...(context.ignored && { ignoredFields: context.ignored }),
    });
    await ids.end(); // every id went through onConfirmed
    await lineageFile.end();
    const { messageIds: _inFile, ...summary } = response;
    // Ids, then the state: from here on these bytes are never published again.
    await writeProgress(ctx, tr);
    state = await ctx.save(
      published(state, { response: summary, processedAt: new Date().toISOString() }),
    );
    return { end: 'published', state, summary };
  } catch (error) {
    if (error instanceof Interrupted) {
      await recordInterruption(ctx, tr, state, {
        confirmed: error.confirmed,
        resumeAfter,
        correlationId,
        idFile,
        lineage,
      });
      return lost(ctx, tr.held) ? { end: 'lost' } : { end: 'interrupted' };
    }
    idFile?.abandon();
    lineage?.abandon();
    if (lostToAnother(error)) throw error; // the caller abandons the try: nothing is settled
    // A full scratch disk (the records' spool, the id list) is the worker's outage, not the file's.
    return { end: 'failed', state, error: asLocalResourceError(error) };
  }
}

/** The local id list and lineage into the drop, beside the state. */
async function writeProgress(ctx: TryContext, tr: FileTry): Promise<void> {
  await ctx.store.write(idsName(tr.spooled.sha256), { file: tr.local.ids });
  await ctx.store.write(lineageName(tr.spooled.sha256), { file: tr.local.lineage });
}

/**
 * The worker is stopping: the ids of what the broker confirmed, then the state that points at
 * them (`interrupted`: the attempt is given back, due at once). No receipt. If the drop cannot
 * be written now, the next try counts this one as unfinished and publishes from the last
 * recorded point again, under the same ids.
 */
async function recordInterruption(
  ctx: TryContext,
  tr: FileTry,
  state: InputState,
  progress: {
    confirmed: number;
    resumeAfter: number;
    correlationId: string;
    idFile: IdFile | undefined;
    lineage: LineageFile | undefined;
  },
): Promise<void> {
  const { confirmed, correlationId } = progress;
  if (lost(ctx, tr.held)) return; // another worker has the file (and its state) now
  try {
    await progress.idFile?.end();
    await progress.lineage?.end();
    if (confirmed > progress.resumeAfter) await writeProgress(ctx, tr);
    const at = new Date().toISOString();
    await ctx.save(interrupted(state, { confirmed, correlationId, at }));
    tr.log.info(
      { sha256: tr.spooled.sha256, confirmed, correlationId },
      'file interrupted by the stop: progress recorded, the file goes back; the next start publishes the rest',
    );
  } catch (stateError) {
    tr.log.warn(
      { reason: (stateError as Error).message, confirmed },
      'file interrupted by the stop, but its progress could not be recorded in the drop: the next try starts from the last recorded point (same ids)',
    );
  }
}
