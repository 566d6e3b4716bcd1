import path from 'node:path';
import { confirmedMessageIds } from '../../ingest/confirmed-ids.js';
import { KINDS } from '../../records/index.js';
import { LEGACY } from '../../records/legacy/index.js';
import type { FileTry, TryContext } from './context.js';
import { decodeDroppedFile } from './publish.js';
import { openIdFile } from '../receipts.js';
import type { InputState } from '../state/input-state.js';

/**
 * What earlier tries of an input given up on had already published: the broker confirmed the
 * first `resume.confirmed` records, and their ids are derived again from the same bytes into
 * the try's local id list (`tr.local.ids`), for the dead receipt to list. Records are never
 * taken back from the queue, so the partner must learn which of them went through. Returns how
 * many ids were listed, or undefined when there were none or they could not be derived (the
 * file no longer passes, the disk is full): the receipt then says only how many records went.
 */
export async function listPublishedBefore(
  ctx: TryContext,
  tr: FileTry,
  state: InputState,
): Promise<number | undefined> {
  const confirmed = state.resume?.confirmed ?? 0;
  if (confirmed === 0) return undefined;
  const { pipeline } = ctx;
  const kind = KINDS[pipeline.kind];
  const ids = openIdFile(tr.local.ids);
  try {
    // One pass: only the first records matter.
    const { records } = await decodeDroppedFile(ctx, tr, Number.POSITIVE_INFINITY);
    if (records.mode !== 'stream') return undefined; // whole files are published at once: never part-way
    const listed = await confirmedMessageIds(
      {
        ...records,
        kind,
        businessId: pipeline.businessId,
        correlationId: state.resume?.correlationId ?? '',
        source: { type: ctx.store.type, name: pipeline.name },
        log: tr.log,
        spoolFile: path.join(tr.work, 'listed.spool'),
        maxRecords: ctx.maxRecords,
        volatilePaths: pipeline.format.startsWith('v1-') ? LEGACY[kind.name]?.receiptTimePaths : [],
      },
      confirmed,
      (chunk) => ids.append(chunk),
    );
    await ids.end();
    return listed;
  } catch (error) {
    ids.abandon();
    tr.log.warn(
      { reason: (error as Error).message, confirmed },
      'could not list the message ids earlier tries of the given-up file published; the receipt gives their number only',
    );
    return undefined;
  }
}
