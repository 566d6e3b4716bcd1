import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { decodeFile } from '../decode/file.js';
import { isIngestError, toProblem } from '../errors.js';
import type { Logger } from '../log.js';
import type { Ingest } from '../pipeline/ingest.js';
import type { Receipt } from '../pipeline/receipt.js';
import type { PipelineDefinition } from '../pipelines.js';
import { KINDS } from '../records/index.js';
import { LEGACY, profileFor, type OnboardingProfiles } from '../records/legacy/index.js';
import { startHeartbeat, type Claim } from './claims.js';
import { idsName, readState, writeState, type InputState } from './drop-state.js';
import { lineageName, openLineageFile } from '../lineage/drop-file.js';
import type { DropLease } from './lease.js';
import { openIdFile } from './receipt-file.js';
import { settle } from './settle.js';
import { spool, sweepAbandoned, SPOOL_OWNER } from './spool.js';
import type { DropStore } from './store.js';

export interface FileProcessorOptions {
  readonly pipeline: PipelineDefinition;
  readonly store: DropStore;
  readonly ingest: Ingest;
  readonly onboarding: OnboardingProfiles;
  readonly log: Logger;
  readonly lease: DropLease;
  readonly workerId: string;
  /** Local folder for copies of files being processed. */
  readonly spoolDirectory: string;
  readonly maxJsonBytes: number;
  readonly maxRecords?: number;
}

/** `retried`: a transient failure; the caller puts the file back. `skipped`: another worker has it now. */
export type Outcome = 'accepted' | 'rejected' | 'duplicate' | 'retried' | 'skipped';

/** Rejections are the input's fault (4xx): the file fails. Anything else may pass: it is retried. */
const isRejection = (error: unknown) => isIngestError(error) && error.status >= 400 && error.status < 500;

/**
 * One claimed file, start to end: spool it (hashing), look up what its bytes did before, decode,
 * ingest (validate everything, then publish with confirms), record the state, settle. Throws
 * only on a transient failure (store, broker), leaving the file to be tried again.
 */
export function createFileProcessor(options: FileProcessorOptions): (held: Claim, fileLog: Logger) => Promise<Outcome> {
  const { pipeline, store, ingest, lease, workerId } = options;
  const kind = KINDS[pipeline.kind];
  const source = `${store.type}:${store.where}`;
  /** The claim went to another worker (missed heartbeat), or the drop's lease did: stop before any effect. */
  const lost = (held: Claim) => held.lost || !lease.held;

  return async function processFile(held, fileLog) {
    const receivedAt = new Date().toISOString();
    await sweepAbandoned(options.spoolDirectory);
    const work = path.join(options.spoolDirectory, `${SPOOL_OWNER}${randomUUID()}`);
    const local = { receipt: path.join(work, 'receipt.json'), ids: path.join(work, 'message-ids'), lineage: path.join(work, 'lineage') };
    const heartbeat = store.atomicRename ? startHeartbeat(store, held, workerId, Math.max(1000, pipeline.claimLeaseMs / 3)) : undefined;
    try {
      await mkdir(work, { recursive: true });
      const spooled = await spool(store, held.current, work);
      const file = { name: held.name, size: spooled.size, sha256: spooled.sha256, source };
      const earlier = await readState(store, spooled.sha256);
      const attempt = (earlier?.attempts ?? 0) + 1;
      const base = { pipeline: pipeline.name, businessId: pipeline.businessId, kind: pipeline.kind, format: pipeline.format, file, receivedAt, attempt };

      if (earlier && earlier.status !== 'failed' && earlier.response) {
        // These bytes were accepted before: never published twice.
        const again = earlier.file !== held.name || earlier.status === 'receipted';
        const response = { ...earlier.response, messageIds: [] };
        const receipt: Receipt = again
          ? { ...base, outcome: 'duplicate', response, processedAt: new Date().toISOString(), duplicateOf: { file: earlier.file, processedAt: earlier.processedAt ?? '', receipt: earlier.receipt ?? '' } }
          : { ...base, outcome: 'accepted', response, processedAt: earlier.processedAt ?? new Date().toISOString() };
        const ids = (await spool(store, idsName(spooled.sha256), work)).path;
        await heartbeat?.stop();
        if (lost(held)) return 'skipped';
        const written = await settle(options, held, receipt, true, { receipt: local.receipt, ids });
        if (!again) await writeState(store, { ...earlier, status: 'receipted', receipt: written });
        fileLog.info({ sha256: spooled.sha256, outcome: receipt.outcome }, again ? 'duplicate of an accepted file: not published again' : 'receipt completed');
        return again ? 'duplicate' : 'accepted';
      }

      const correlationId = randomUUID();
      let receipt: Receipt;
      let state: InputState;
      try {
        const records = await decodeFile(spooled.path, {
          kind,
          format: pipeline.format,
          businessId: pipeline.businessId,
          context: { defaults: profileFor(options.onboarding, pipeline.businessId, kind.name), receivedAt },
          maxJsonBytes: options.maxJsonBytes,
        });
        if (lost(held)) return 'skipped';
        const idFile = openIdFile(local.ids);
        const lineage = openLineageFile(local.lineage, { pipeline: pipeline.name, businessId: pipeline.businessId, kind: kind.name, file: held.name, sha256: spooled.sha256 });
        const response = await ingest({
          kind,
          businessId: pipeline.businessId,
          ...records,
          onConfirmed: (ids) => idFile.append(ids),
          onLineage: (confirmed) => lineage.append(confirmed),
          correlationId,
          source: { type: store.type, name: pipeline.name },
          log: fileLog.child({ correlationId }),
          maxRecords: options.maxRecords,
          volatilePaths: pipeline.format === 'v2-json' ? [] : LEGACY[kind.name]?.receiptTimePaths,
        });
        await idFile.append(response.messageIds); // array batches return theirs; streamed ones went to the sink
        await idFile.end();
        await lineage.end();
        const processedAt = new Date().toISOString();
        const { messageIds: _inFile, ...summary } = response;
        // Ids, then the state: from here on these bytes are never published again.
        await store.write(idsName(spooled.sha256), { file: local.ids });
        await store.write(lineageName(spooled.sha256), { file: local.lineage });
        state = { sha256: spooled.sha256, status: 'published', file: held.name, attempts: attempt, response: summary, processedAt };
        await writeState(store, state);
        receipt = { ...base, outcome: 'accepted', response: { ...summary, messageIds: [] }, processedAt };
      } catch (error) {
        if (!isRejection(error)) throw error;
        receipt = { ...base, outcome: 'rejected', response: toProblem(error, held.name).problem, processedAt: new Date().toISOString() };
        state = { sha256: spooled.sha256, status: 'failed', file: held.name, attempts: attempt, lastError: (error as Error).message };
        await writeState(store, state);
      }
      await heartbeat?.stop();
      if (lost(held)) return 'skipped'; // another worker took the file over and settles it
      const accepted = receipt.outcome === 'accepted';
      const written = await settle(options, held, receipt, accepted, { receipt: local.receipt, ids: accepted ? local.ids : undefined });
      if (accepted) await writeState(store, { ...state, status: 'receipted', receipt: written });
      fileLog.info({ sha256: spooled.sha256, outcome: receipt.outcome, attempt, correlationId }, accepted ? 'file accepted' : 'file rejected');
      return accepted ? 'accepted' : 'rejected';
    } finally {
      await heartbeat?.stop();
      await rm(work, { recursive: true, force: true });
    }
  };
}
