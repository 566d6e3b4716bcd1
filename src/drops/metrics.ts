import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LOCAL_RESOURCES } from '../errors.js';
import type { HandledOutcome } from '../vocabulary.js';

/** What a drop runner reports (`createDropRunner({ metrics })`). */
export interface DropMetrics {
  /** A receipt could not be written to the drop (the file stays and is tried again). */
  receiptWriteFailed(pipeline: string): void;
  /** How many inputs of a pipeline are in a state (`InputStatus`: received … dead). */
  setInputs(pipeline: string, state: string, count: number): void;
  /** One try of a file ended (`HandledOutcome`: accepted, rejected, retried …) after this many seconds. */
  fileHandled(pipeline: string, outcome: HandledOutcome, seconds: number): void;
  /** A scheduled look at the drop went through (listed, and every ready file handled), at `atMs`. */
  lookSucceeded(pipeline: string, atMs: number): void;
  /** A scheduled look at the drop failed (it could not be listed, or a file not handled). */
  lookFailed(pipeline: string): void;
  /** A try ran out of a local resource (`resource`: ENOSPC, EDQUOT, EMFILE, ENFILE); the file is tried again. */
  localResourcesExhausted(pipeline: string, resource: string): void;
}

const FILE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

/**
 * Series of the inbound drops, on the app's registry (as `createEventsMetrics` declares the
 * outbound half's). Each pipeline that runs has its counters at 0 from the start.
 */
export function createDropMetrics(registry: Registry, pipelines: readonly string[]): DropMetrics {
  const registers = [registry];
  const receiptFailures = new Counter({
    name: 'warehouse_ingest_receipt_write_failures_total',
    help: 'Receipts that could not be written to a drop.',
    labelNames: ['pipeline'] as const,
    registers,
  });
  // Every pipeline from 0, so `increase(…) > 0` sees its first failed receipt (a series that appears at 1 never increased).
  for (const pipeline of pipelines) receiptFailures.inc({ pipeline }, 0);
  const localResources = new Counter({
    name: 'warehouse_ingest_local_resources_exhausted_total',
    help: 'Tries of dropped files cut short because the worker ran out of local disk or file descriptors (the file is tried again).',
    labelNames: ['pipeline', 'resource'] as const,
    registers,
  });
  for (const pipeline of pipelines)
    for (const resource of Object.keys(LOCAL_RESOURCES))
      localResources.inc({ pipeline, resource }, 0);
  const inputs = new Gauge({
    name: 'warehouse_ingest_inputs',
    help: 'Inputs of a drop pipeline, by state.',
    labelNames: ['pipeline', 'state'] as const,
    registers,
  });
  const fileLatency = new Histogram({
    name: 'warehouse_ingest_file_duration_seconds',
    help: 'One try of a dropped file, from its claim to its outcome (accepted, rejected, duplicate, dead, retried, skipped, interrupted, not-due), by pipeline.',
    labelNames: ['pipeline', 'outcome'] as const,
    buckets: FILE_BUCKETS,
    registers,
  });
  const lastLook = new Gauge({
    name: 'warehouse_ingest_last_successful_look_timestamp_seconds',
    help: 'When a scheduled look at a drop last went through (Unix seconds), by pipeline; absent until the first.',
    labelNames: ['pipeline'] as const,
    registers,
  });
  // Absent until a look was tried: a standby worker (another holds the lease) and a cron pipeline
  // before its first tick say nothing, so `max by (pipeline)` is 0 only when the looks fail.
  const reachable = new Gauge({
    name: 'warehouse_ingest_drop_reachable',
    help: "Whether this worker's last scheduled look at a drop went through (1) or failed (0), by pipeline; absent until its first look.",
    labelNames: ['pipeline'] as const,
    registers,
  });
  return {
    fileHandled(pipeline, outcome, seconds) {
      fileLatency.observe({ pipeline, outcome }, seconds);
    },
    lookSucceeded(pipeline, atMs) {
      lastLook.set({ pipeline }, atMs / 1000);
      reachable.set({ pipeline }, 1);
    },
    lookFailed(pipeline) {
      reachable.set({ pipeline }, 0);
    },
    receiptWriteFailed(pipeline) {
      receiptFailures.inc({ pipeline });
    },
    localResourcesExhausted(pipeline, resource) {
      localResources.inc({ pipeline, resource });
    },
    setInputs(pipeline, state, count) {
      inputs.set({ pipeline, state }, count);
    },
  };
}
