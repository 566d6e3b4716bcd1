import type { Channel, ChannelModel, GetMessage } from 'amqplib';
import { openBrokerConnection } from '../../broker/connection.js';
import type { EventsConfig, WebhookConfig } from '../../events/config.js';
import {
  DEAD_AT_HEADER,
  DEAD_REASON_HEADER,
  ENDPOINT_HEADER,
  LAST_FAILURE_HEADER,
  NEXT_ATTEMPT_HEADER,
} from '../../events/retry.js';
import {
  endpointLabel,
  webhookEndpointId,
  webhookEndpointName,
} from '../../events/subscriptions.js';
import type { AttemptEntry, HistoryStore, Scope } from '../../history/store.js';
import type { AttemptEnd, DisabledBy } from '../../vocabulary.js';
import { fileDestinationId } from '../../events/destinations/file/index.js';
import { eventsTopology } from '../../events/topology.js';
import { browseQueue } from './browse.js';
import {
  assertWorkersQueue,
  REPORT_LIFETIME_INTERVALS,
  workersQueueName,
  type EndpointReport,
  type WorkerReport,
} from '../../events/worker-report.js';

/** One endpoint as the broker sees it (the same for every worker). */
export interface EndpointStatus {
  readonly businessId: string;
  /** Host and port only; `(removed endpoint <id>)` for letters of an endpoint no longer configured. */
  readonly endpoint: string;
  /** As the history and `events disable` name it: its id, or its full URL (`file:<pipeline>` for a folder). */
  readonly name?: string;
  /** Set to false in the configuration. */
  readonly enabled: boolean;
  /** What the history keeps of it (when the history is on and could be read). */
  history?: EndpointHistory;
  /** Events parked for a retry (or deferred) for this endpoint. */
  retrying: number;
  /** The soonest of their next attempts (ISO 8601). */
  nextAttemptAt?: string;
  dead: number;
  lastFailure?: string;
  lastFailureAt?: string;
  /** Delivered by the workers reporting now, since each started (their reports). */
  delivered: number;
  /** The earliest "failing since" a reporting worker gives (its last attempt failed). */
  failingSince?: string;
  /** Backed off (failing continuously) in some worker until this time. */
  backedOffUntil?: string;
  /** A worker is probing it after a back-off. */
  probing?: boolean;
  /** A worker disabled it after a 410. */
  disabledByWorker?: boolean;
}

/** An endpoint as the history keeps it: the state every worker shares, and its attempts. */
export interface EndpointHistory {
  /** False once disabled (after a 410, or by `events disable`) until `events enable`. */
  enabled: boolean;
  disabledBy?: DisabledBy;
  /** When its current run of failed attempts began, as the last worker to change it wrote. */
  failingSince?: string;
  /** Attempts kept (within the retention) that delivered, and that did not. */
  delivered: number;
  failed: number;
  /** The newest few, newest first. */
  lastAttempts: Array<{
    at: string;
    end: AttemptEnd;
    status?: number;
    durationMs: number;
    error?: string;
  }>;
}

export interface EventsStatus {
  /** Events waiting in the delivery queue (not yet taken by a worker). */
  readonly waiting: number;
  readonly endpoints: EndpointStatus[];
  /** Dead letters that belong to no endpoint (malformed events), by reason. */
  readonly malformed: Record<string, number>;
  /** Workers whose latest report is fresh (they are consuming now). */
  readonly workers: number;
  /** Whether the history was read (`unavailable`: the reason it could not be); absent when it is off. */
  readonly history?: 'read' | { readonly unavailable: string };
}

export interface StatusOptions {
  readonly url: string | readonly string[];
  readonly events: EventsConfig;
  readonly tenants: ReadonlyArray<{
    readonly businessId: string;
    readonly webhooks?: readonly WebhookConfig[] | undefined;
  }>;
  /** Pipelines with outbound files, so their folders are named (not shown as removed endpoints). */
  readonly outbound?: ReadonlyArray<{
    readonly name: string;
    readonly businessId: string;
    readonly events?: { readonly path: string } | undefined;
  }>;
  /** The history, not opened; absent when it is off. */
  readonly history?: HistoryStore;
  /** Only this business's endpoints, and only its rows read from the history (a partner's or an operator's question about one business). */
  readonly businessId?: string;
}

const text = (value: unknown) =>
  Buffer.isBuffer(value) ? value.toString('utf8') : value === undefined ? undefined : String(value);

/**
 * Looks at (never takes) the retry and dead-letter queues (browse.ts); checked first, so a queue
 * that is missing fails the command. Counters of deliveries and "failing since" live in each
 * worker's /metrics.
 */
async function browse(channel: Channel, queue: string): Promise<GetMessage[]> {
  await channel.checkQueue(queue);
  return browseQueue(channel, queue);
}

export async function eventsStatus(options: StatusOptions): Promise<EventsStatus> {
  const topology = eventsTopology(options.events);
  const byId = new Map<string, EndpointStatus>();
  for (const tenant of options.tenants)
    for (const [index, webhook] of (tenant.webhooks ?? []).entries())
      byId.set(webhookEndpointId(tenant.businessId, webhook), {
        businessId: tenant.businessId,
        endpoint: endpointLabel(webhook, index),
        name: webhookEndpointName(webhook),
        enabled: webhook.enabled,
        retrying: 0,
        dead: 0,
        delivered: 0,
      });
  for (const pipeline of options.outbound ?? [])
    if (pipeline.events)
      byId.set(fileDestinationId(pipeline.businessId, pipeline.name), {
        businessId: pipeline.businessId,
        endpoint: `file:${pipeline.name}/${pipeline.events.path}`,
        name: `file:${pipeline.name}`,
        enabled: true,
        retrying: 0,
        dead: 0,
        delivered: 0,
      });
  const connection = await openBrokerConnection({
    url: options.url,
    name: 'warehouse-ingest events status',
  });
  try {
    const channel = await connection.createChannel();
    const { messageCount: waiting } = await channel.checkQueue(topology.queue);
    const malformed: Record<string, number> = {};
    const entry = (message: GetMessage): EndpointStatus | undefined => {
      const id = text(message.properties.headers?.[ENDPOINT_HEADER]);
      if (id === undefined) return undefined;
      let found = byId.get(id);
      if (!found) {
        found = {
          businessId: text(message.properties.headers?.['business-id']) ?? '?',
          endpoint: `(removed endpoint ${id})`,
          enabled: false,
          retrying: 0,
          dead: 0,
          delivered: 0,
        };
        byId.set(id, found);
      }
      return found;
    };
    const noteFailure = (status: EndpointStatus, message: GetMessage, at: string | undefined) => {
      const failure = text(message.properties.headers?.[LAST_FAILURE_HEADER]);
      if (failure && (!status.lastFailureAt || (at ?? '') >= status.lastFailureAt)) {
        status.lastFailure = failure;
        if (at) status.lastFailureAt = at;
      }
    };
    for (const queue of topology.retryQueues.values())
      for (const message of await browse(channel, queue)) {
        const status = entry(message);
        if (!status) continue;
        status.retrying += 1;
        const next = text(message.properties.headers?.[NEXT_ATTEMPT_HEADER]);
        if (next && (!status.nextAttemptAt || next < status.nextAttemptAt))
          status.nextAttemptAt = next;
        noteFailure(status, message, undefined);
      }
    const dead = await browse(channel, topology.deadQueue);
    for (const message of dead) {
      const status = entry(message);
      if (!status) {
        const reason = text(message.properties.headers?.[DEAD_REASON_HEADER]) ?? 'unknown';
        malformed[reason] = (malformed[reason] ?? 0) + 1;
        continue;
      }
      status.dead += 1;
      noteFailure(status, message, text(message.properties.headers?.[DEAD_AT_HEADER]));
    }
    const reports = await workerReports(channel, topology.queue);
    for (const report of reports)
      for (const [id, figures] of Object.entries(report.endpoints)) {
        const status = byId.get(id);
        if (status) addReport(status, figures);
      }
    await channel.close(); // puts every browsed message back
    await untilReturned(connection, topology.deadQueue, dead.length);
    const endpoints = [...byId.values()].filter(
      (e) => options.businessId === undefined || e.businessId === options.businessId,
    );
    const history = options.history && (await addHistory(endpoints, options.history, options));
    return {
      waiting,
      endpoints,
      malformed,
      workers: reports.length,
      ...(history && { history }),
    };
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/**
 * A quorum queue takes back the messages of a closed channel asynchronously: wait (briefly)
 * until the dead letters we held are counted again, so that whoever runs `events status` and
 * then looks at (or replays) the dead-letter queue finds them all. Nothing consumes that queue,
 * so its count can only come back up; the retry queues are not waited for, as their messages
 * may expire and move on meanwhile.
 */
export async function untilReturned(
  connection: ChannelModel,
  queue: string,
  held: number,
  deadline = Date.now() + RETURN_WAIT_MS,
): Promise<void> {
  if (held === 0) return;
  const channel = await connection.createChannel();
  try {
    while ((await channel.checkQueue(queue)).messageCount < held && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
  } finally {
    await channel.close().catch(() => undefined);
  }
}

const RETURN_WAIT_MS = 5_000;

/**
 * What each running worker last said of its endpoints (delivered, failing since, backed off,
 * disabled), browsed on `channel`: closing the channel puts the reports back.
 */
export async function workerReports(channel: Channel, queue: string): Promise<WorkerReport[]> {
  await assertWorkersQueue(channel, queue); // absent until a worker of this version ran
  return latestReports(await browse(channel, workersQueueName(queue)));
}

/** Each worker's newest report, when still fresh (an expired one may linger until it reaches the head). */
function latestReports(messages: readonly GetMessage[], now = Date.now()): WorkerReport[] {
  const byWorker = new Map<string, WorkerReport>();
  for (const message of messages) {
    let report: WorkerReport;
    try {
      report = JSON.parse(message.content.toString('utf8')) as WorkerReport;
    } catch {
      continue;
    }
    if (now - Date.parse(report.at) > report.intervalMs * REPORT_LIFETIME_INTERVALS) continue;
    const known = byWorker.get(report.worker);
    if (!known || known.at < report.at) byWorker.set(report.worker, report);
  }
  return [...byWorker.values()];
}

function addReport(status: EndpointStatus, figures: EndpointReport): void {
  status.delivered += figures.delivered;
  if (figures.failingSince && (!status.failingSince || figures.failingSince < status.failingSince))
    status.failingSince = figures.failingSince;
  if (
    figures.backedOffUntil &&
    (!status.backedOffUntil || figures.backedOffUntil > status.backedOffUntil)
  )
    status.backedOffUntil = figures.backedOffUntil;
  if (figures.probing) status.probing = true;
  if (figures.disabled) status.disabledByWorker = true;
}

const LAST_ATTEMPTS = 5;

/**
 * Adds what the history keeps to each configured endpoint, read with the business's scope when
 * one is asked for (no other business's rows are read). A history that cannot be opened or read
 * leaves the broker's and workers' view alone.
 */
async function addHistory(
  endpoints: readonly EndpointStatus[],
  store: HistoryStore,
  options: Pick<StatusOptions, 'businessId'>,
): Promise<EventsStatus['history']> {
  const scope: Scope =
    options.businessId === undefined ? { operator: true } : { businessId: options.businessId };
  try {
    await store.open();
    const [states, activity] = await Promise.all([
      store.endpointStates(scope),
      store.endpointActivity(scope, LAST_ATTEMPTS),
    ]);
    const key = (businessId: string, name: string) => `${businessId}\n${name}`;
    const byName = new Map<string, EndpointStatus>();
    for (const status of endpoints)
      if (status.name !== undefined) byName.set(key(status.businessId, status.name), status);
    const of = (businessId: string, name: string) => {
      const status = byName.get(key(businessId, name));
      if (status) status.history ??= { enabled: true, delivered: 0, failed: 0, lastAttempts: [] };
      return status?.history;
    };
    for (const state of states) {
      const history = of(state.businessId, state.endpoint);
      if (!history) continue;
      history.enabled = state.enabled;
      if (state.disabledBy && !state.enabled) history.disabledBy = state.disabledBy;
      if (state.failingSince) history.failingSince = state.failingSince.toISOString();
    }
    for (const seen of activity) {
      const history = of(seen.businessId, seen.endpoint);
      if (!history) continue;
      history.delivered = seen.delivered;
      history.failed = seen.failed;
      history.lastAttempts = seen.lastAttempts.map(attemptLine);
    }
    return 'read';
  } catch (error) {
    return { unavailable: (error as Error).message };
  } finally {
    await store.close().catch(() => undefined);
  }
}

const attemptLine = (attempt: AttemptEntry): EndpointHistory['lastAttempts'][number] => ({
  at: attempt.at.toISOString(),
  end: attempt.end,
  ...(attempt.status !== undefined && { status: attempt.status }),
  durationMs: attempt.durationMs,
  ...(attempt.error !== undefined && { error: attempt.error }),
});
