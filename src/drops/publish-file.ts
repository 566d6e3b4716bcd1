import { decodeFile } from '../decode/file.js';
import { Interrupted } from '../errors.js';
import { lineageName, openLineageFile, type LineageFile } from '../lineage/drop-file.js';
import type { AcceptedSummary, InputState } from './state/input-state.js';
import { KINDS } from '../records/index.js';
import { LEGACY, profileFor } from '../records/legacy/index.js';
import { lost, type FileTry, type TryContext } from './file-try.js';
import { openIdFile, type IdFile } from './receipts.js';
import { restoreLines } from './restore-lines.js';
import { interrupted, published, validated } from './state/machine.js';
import { idsName } from './state/persist.js';

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
 * recording `validated` and `published` in the state; a try resuming an interrupted one
 * publishes only the records after its confirmed ones, under the same correlation id.
 */
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
    const records = await decodeFile(tr.spooled.path, {
      kind,
      format: pipeline.format,
      businessId: pipeline.businessId,
      context: {
        defaults: profileFor(ctx.onboarding, pipeline.businessId, kind.name),
        receivedAt: tr.receivedAt,
      },
      maxJsonBytes: ctx.maxJsonBytes,
    });
    if (lost(ctx, tr.held)) return { end: 'lost' };
    if (state.resume && records.mode === 'stream')
      resumeAfter = await restoredIds(ctx, tr, state.resume.confirmed);
    const ids = openIdFile(tr.local.ids, { append: resumeAfter > 0 });
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
      { append: resumeAfter > 0 && (await restoredLineage(ctx, tr, resumeAfter)) },
    );
    lineage = lineageFile;
    const body =
      records.mode === 'stream'
        ? {
            ...records,
            onConfirmed: (confirmed: readonly string[]) => ids.append(confirmed),
            signal: ctx.signal,
            resumeAfter,
          }
        : records;
    const response = await ctx.ingest({
      kind,
      businessId: pipeline.businessId,
      ...body,
      onValidated: async () => {
        state = await ctx.save(validated(state));
      },
      onLineage: (confirmed) => lineageFile.append(confirmed),
      correlationId,
      source: { type: ctx.store.type, name: pipeline.name },
      log: tr.log.child({ correlationId }),
      maxRecords: ctx.maxRecords,
      volatilePaths: pipeline.format === 'v2-json' ? [] : LEGACY[kind.name]?.receiptTimePaths,
    });
    await ids.append(response.messageIds); // array batches return theirs; streamed ones went to the file
    await ids.end();
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
    return { end: 'failed', state, error };
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

/**
 * The ids an interrupted try had confirmed, from the drop into the local id list, which this
 * try appends to. Returns how many records to skip: 0 (publish everything again, same ids)
 * when the list holds fewer than `confirmed`.
 */
async function restoredIds(ctx: TryContext, tr: FileTry, confirmed: number): Promise<number> {
  const name = idsName(tr.spooled.sha256);
  if (!(await restoreLines(ctx.store, name, tr.work, tr.local.ids, confirmed))) {
    tr.log.warn(
      { confirmed },
      'the ids of the interrupted try are missing or incomplete: publishing the whole file again (same ids)',
    );
    return 0;
  }
  tr.log.info(
    { confirmed },
    'resuming an interrupted try: its confirmed records are not published again',
  );
  return confirmed;
}

/**
 * The lineage of the interrupted try's confirmed records (its header, then a line a record),
 * which this try appends to. False (the lineage then starts at the resumed records; said in
 * the log) when it is missing or shorter: lineage is not worth publishing again for.
 */
async function restoredLineage(ctx: TryContext, tr: FileTry, confirmed: number): Promise<boolean> {
  const name = lineageName(tr.spooled.sha256);
  if (await restoreLines(ctx.store, name, tr.work, tr.local.lineage, confirmed + 1)) return true;
  tr.log.warn(
    { confirmed },
    'the lineage of the interrupted try is missing or incomplete: the lineage of this file starts at the resumed records',
  );
  return false;
}
