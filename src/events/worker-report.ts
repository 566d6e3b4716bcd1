import { assertOneNodeQueue } from './topology.js';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Channel } from 'amqplib';
import type { EndpointStates } from './state/endpoint.js';
import type { DisabledBy } from '../vocabulary.js';

/**
 * What only a worker knows — deliveries it made, which endpoints it sees failing or has backed
 * off — published to the broker every few seconds, so `events status` (a separate process that
 * knows no worker's address) can show it. The queue `<queue>.workers` holds reports that expire
 * (per-message TTL); `events status` browses it and keeps each worker's latest. A worker that
 * stops stops reporting, and its figures disappear once its reports expire.
 */

export const workersQueueName = (queue: string) => `${queue}.workers`;

/** Fixed, so every worker declares the queue with the same arguments whatever its settings. */
const WORKERS_QUEUE_MAX_LENGTH = 10_000;

/** Reports expire after this many intervals: one lost report does not hide a live worker. */
export const REPORT_LIFETIME_INTERVALS = 3;

export interface EndpointReport {
  /** Delivered by this worker since it started. */
  readonly delivered: number;
  /** When the current run of failed attempts began (ISO 8601); absent when the last one succeeded. */
  readonly failingSince?: string;
  /** No attempt before this time (ISO 8601): backed off after failing continuously. */
  readonly backedOffUntil?: string;
  /** A probe is under way after a back-off. */
  readonly probing?: true;
  /** Disabled (after a 410, or by an operator: the same in every worker). */
  readonly disabled?: true;
  readonly disabledBy?: DisabledBy;
}

export interface WorkerReport {
  readonly worker: string;
  readonly startedAt: string;
  readonly at: string;
  readonly intervalMs: number;
  /** By endpoint id; only endpoints this worker has something to say about. */
  readonly endpoints: Readonly<Record<string, EndpointReport>>;
}

export function workerName(): string {
  return `${hostname()}:${process.pid}:${randomBytes(2).toString('hex')}`;
}

/** The report of one worker now, from what it knows of each endpoint (state/endpoint.ts). */
export function buildReport(
  states: EndpointStates,
  identity: { readonly worker: string; readonly startedAt: Date; readonly intervalMs: number },
  now: Date,
): WorkerReport {
  const endpoints: Record<string, EndpointReport> = {};
  for (const [id, { delivered, failingSince, circuit, disabled, disabledBy }] of states.entries()) {
    endpoints[id] = {
      delivered,
      ...(failingSince !== undefined ? { failingSince: new Date(failingSince).toISOString() } : {}),
      ...(circuit.state === 'open'
        ? { backedOffUntil: new Date(circuit.until).toISOString() }
        : {}),
      ...(circuit.state === 'half-open' ? { probing: true as const } : {}),
      ...(disabled ? { disabled: true as const, ...(disabledBy && { disabledBy }) } : {}),
    };
  }
  return {
    worker: identity.worker,
    startedAt: identity.startedAt.toISOString(),
    at: now.toISOString(),
    intervalMs: identity.intervalMs,
    endpoints,
  };
}

const WORKERS_QUEUE_OPTIONS = {
  durable: true,
  arguments: {
    'x-queue-type': 'classic',
    'x-max-length': WORKERS_QUEUE_MAX_LENGTH,
    'x-overflow': 'drop-head',
  },
};

export async function assertWorkersQueue(channel: Channel, queue: string): Promise<void> {
  await channel.assertQueue(workersQueueName(queue), WORKERS_QUEUE_OPTIONS);
}

/**
 * The same on a channel of its own, tolerating a home node that is down (a cluster lost the
 * node this classic queue lives on): true then, and reports are not kept until it is back.
 */
export function assertWorkersQueueTolerant(
  scratch: () => Promise<Channel>,
  queue: string,
): Promise<boolean> {
  return assertOneNodeQueue(scratch, workersQueueName(queue), WORKERS_QUEUE_OPTIONS);
}

/** Publishes one report (not persistent: a report outliving a broker restart would be stale). */
export function publishReport(channel: Channel, queue: string, report: WorkerReport): void {
  channel.publish('', workersQueueName(queue), Buffer.from(JSON.stringify(report)), {
    contentType: 'application/json',
    expiration: String(report.intervalMs * REPORT_LIFETIME_INTERVALS),
    timestamp: Math.floor(Date.parse(report.at) / 1000),
  });
}
