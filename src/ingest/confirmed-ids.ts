import type { StreamBatch } from './batch.js';
import { MessageIds } from './message-id.js';
import { PUBLISH_CHUNK, prepareStream, spoolPlan } from './stream-publish.js';
import { validateBatch } from './validate-batch.js';

/**
 * The message ids under which the first `count` records of a streamed batch were published,
 * told to `sink` a chunk at a time, with nothing published: the validation pass runs again and
 * the ids are numbered exactly as the publish pass numbers them (identical records included),
 * since they derive from the same bytes. For a receipt that must say what earlier tries of an
 * input already published (a dead file). Returns how many were listed (fewer only if the batch
 * holds fewer records); throws the validation error if the batch does not pass now.
 */
export async function confirmedMessageIds(
  batch: StreamBatch,
  count: number,
  sink: (ids: readonly string[]) => Promise<void>,
): Promise<number> {
  // Routing keys do not enter an id: none is needed here.
  const spooler = prepareStream({ ...spoolPlan(batch), withReferences: false }, () => '');
  try {
    const verdict = await validateBatch(batch, spooler.onValid);
    if (!verdict.ok) throw verdict.error;
    await spooler.spool.finish();
    const ids = new MessageIds(batch.businessId, batch.kind.name, batch.volatilePaths, (hex) =>
      spooler.repeats.mayRepeat(hex),
    );
    let listed = 0;
    let chunk: string[] = [];
    for await (const message of spooler.spool.read()) {
      if (listed === count) break;
      chunk.push(ids.forDigest(message.digest));
      listed += 1;
      if (chunk.length === PUBLISH_CHUNK) {
        await sink(chunk);
        chunk = [];
      }
    }
    if (chunk.length > 0) await sink(chunk);
    return listed;
  } finally {
    await spooler.spool.remove();
  }
}
