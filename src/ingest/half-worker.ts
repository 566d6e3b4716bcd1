/**
 * A worker thread of `halves.ts`: decodes, validates and spools one half of a split file exactly
 * as the one-pass validation would (the same decoder, checks and spool), and reports
 * once what the first thread needs to join the halves. Runs nothing else; ends when reported.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readHalf } from '../decode/file.js';
import { KINDS } from '../records/index.js';
import type { HalfJob, HalfReport } from './halves.js';
import { compileRoutingKey, routableCheck } from './route.js';
import { prepareStream } from './stream-publish.js';
import { validateStream } from './validate-batch.js';

async function run(job: HalfJob): Promise<HalfReport> {
  const { half } = job;
  const kind = KINDS[half.kind];
  const routingKeyFor = compileRoutingKey(job.routingTemplate);
  const reader = readHalf(half);
  const spooler = prepareStream(
    {
      kind,
      businessId: half.businessId,
      volatilePaths: job.volatilePaths,
      withReferences: job.withReferences,
      spoolFile: job.spoolFile,
      inMemoryUpTo: 0,
    },
    routingKeyFor,
  );
  const verdict = await validateStream(
    {
      mode: 'stream',
      kind,
      businessId: half.businessId,
      maxRecords: job.maxRecords,
      open: () => reader.open(),
    },
    spooler.onValid,
    routableCheck(routingKeyFor, kind.name, half.businessId),
  );
  if (!verdict.ok) {
    await spooler.spool.remove();
    return { ok: false, reason: `the ${half.part} half is not valid` };
  }
  await spooler.spool.finish();
  const { written } = await spooler.spool.keepFile();
  return {
    ok: true,
    total: verdict.total,
    written,
    repeats: spooler.repeats.exported(),
    orders: reader.orders.words,
    ignored: reader.ignored?.list() ?? [],
  };
}

const port = parentPort!;
run(workerData as HalfJob).then(
  // The tables are moved, not copied: this thread ends once it has reported.
  (report) =>
    port.postMessage(
      report,
      report.ok
        ? [report.orders, ...report.repeats.layers.map((layer) => layer.bits)].map(
            (words) => words.buffer as ArrayBuffer,
          )
        : [],
    ),
  (error: unknown) =>
    port.postMessage({
      ok: false,
      reason: error instanceof Error ? error.message : String(error),
    } satisfies HalfReport),
);
