import type { ChannelModel } from 'amqplib';
import { brokerNodeOf, openBrokerConnection, type BrokerNodes } from '../broker/connection.js';
import { confirmedChannel, type ConfirmedChannel } from '../broker/confirms.js';
import { QueueTypeMismatch, ShardPluginMissing } from '../operator-errors.js';
import { reconnectDelay } from '../backoff.js';
import type { Logger } from '../log.js';
import { assertTopology, messageOf, TopologyError, type Topology } from './rabbitmq-topology.js';

/**
 * `connecting` until the first success, `connected` while a publishing channel is open,
 * `reconnecting` after a loss, `closed` after `close()`.
 */
export type RabbitMqState = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'closed';

/** What the supervisor needs: the publisher's options, resolved to their values. */
export interface SupervisorOptions {
  readonly urls: readonly string[];
  readonly nodes: BrokerNodes;
  readonly clientName: string;
  readonly connectTimeoutMs: number | undefined;
  readonly topology: Topology;
  readonly publishTimeoutMs: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

/** The live connection and publishing channel the publisher works with, kept open by one loop. */
export interface ChannelSupervisor {
  readonly state: RabbitMqState;
  /** True from `stop()` on: the publisher refuses new batches. */
  readonly stopping: boolean;
  readonly connection: ChannelModel | undefined;
  /** The confirm channel, while one is open. */
  readonly publishing: ConfirmedChannel | undefined;
  /** The broker's reason while it blocks publishes (a resource alarm). */
  readonly blockedBy: string | undefined;
  onStateChange(listener: (state: RabbitMqState) => void): () => void;
  /** Starts the loop; settles after the first attempt (rejects only on a topology the broker cannot take). */
  start(): Promise<void>;
  /** Marks it stopping, waits for `drain` while the channel is still open, then closes everything. */
  stop(drain: () => Promise<unknown>): Promise<void>;
}

/** Resolves with the promise's value, or with `fallback` after `ms`. Used where a dying socket could hang a call. */
export function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => (timer = setTimeout(resolve, ms, fallback)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const CLOSE_GRACE_MS = 2000;

/**
 * Recovery is a small hand-written loop rather than amqplib's `recovery` option: we must also
 * reopen the publishing channel when it alone closes (a 404 on a deleted exchange leaves the
 * connection up), which the built-in recovery does not do, and one loop for both cases is
 * easier to follow than the library's events plus a second loop. It also avoids the built-in
 * wrapper's trap of channel calls that wait forever while disconnected: here, while no channel
 * is open, `publish` fails at once with 503.
 */
export function createChannelSupervisor(
  options: SupervisorOptions,
  log: Logger,
): ChannelSupervisor {
  const { urls, topology, publishTimeoutMs, initialDelayMs, maxDelayMs } = options;
  let state: RabbitMqState = 'idle';
  const listeners = new Set<(state: RabbitMqState) => void>();
  let connection: ChannelModel | undefined;
  let lostWith: Error | undefined;
  let lostNode: string | undefined;
  let blockedBy: string | undefined;
  let publishing: ConfirmedChannel | undefined;
  let stopping = false;
  let requestStop!: () => void;
  const stopRequested = new Promise<{ error?: Error }>(
    (resolve) => (requestStop = () => resolve({})),
  );
  let started: Promise<void> | undefined;
  /** Whether `start()` has answered: a topology the broker cannot take fails it only until then. */
  let startSettled = false;
  let loop: Promise<void> = Promise.resolve();

  function setState(next: RabbitMqState): void {
    if (state === next) return;
    state = next;
    for (const listener of listeners) listener(next);
  }

  async function openConnection(): Promise<ChannelModel> {
    const model = await openBrokerConnection({
      url: urls,
      nodes: options.nodes,
      name: options.clientName,
      ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
    });
    // 'error' is always followed by 'close' with the same error; the loop logs it there.
    model.on('error', () => {});
    model.on('close', (error?: Error) => {
      if (connection === model) connection = undefined;
      lostWith = error;
      lostNode = brokerNodeOf(model);
    });
    model.on('blocked', (reason: string) => {
      blockedBy = reason;
      log.warn(
        { reason },
        'the broker is blocking publishes (resource alarm); batches will time out until it unblocks',
      );
    });
    model.on('unblocked', () => {
      blockedBy = undefined;
      log.info('the broker unblocked publishes');
    });
    return model;
  }

  function pause(ms: number): Promise<unknown> {
    return within(stopRequested, ms, {});
  }

  /** Connects, declares topology, opens the confirm channel; again after any loss, until `stop()`. */
  async function supervise(firstAttemptDone: (error?: unknown) => void): Promise<void> {
    let failures = 0;
    let everConnected = false;
    while (!stopping) {
      try {
        if (!connection) {
          const model = await openConnection();
          if (stopping) {
            await within(
              model.close().catch(() => {}),
              CLOSE_GRACE_MS,
              undefined,
            );
            break;
          }
          connection = model;
        }
        // Once per connect: the operator's view of the drain, until the old queue is deleted.
        for (const old of await assertTopology(connection, topology))
          log.info(
            { queue: old.name, replacedBy: old.replacedBy, messages: old.messages ?? null },
            old.messages === undefined
              ? 'replaced queue is gone (deleted after its drain): remove `replaces` from the configuration'
              : `replaced queue unbound: records go to '${old.replacedBy}' only; ${old.messages} left in it for its consumers (delete it once 0)`,
          );
        const channel = confirmedChannel(
          await connection.createConfirmChannel(),
          topology.exchange,
          publishTimeoutMs,
        );
        if (stopping) {
          channel.channel.close().catch(() => {});
          break;
        }
        publishing = channel;
        log.info(
          { afterFailedAttempts: failures, node: brokerNodeOf(connection) },
          everConnected ? 'reconnected to the message broker' : 'connected to the message broker',
        );
        everConnected = true;
        failures = 0;
        setState('connected');
        firstAttemptDone();
        const { error } = await Promise.race([channel.closed, stopRequested]);
        publishing = undefined;
        if (stopping) break;
        setState('reconnecting');
        if (connection)
          log.warn(
            { reason: error?.message, node: brokerNodeOf(connection) },
            'the broker closed the publishing channel; reopening it',
          );
        else
          log.warn(
            { reason: lostWith ? messageOf(lostWith) : 'closed', node: lostNode },
            urls.length > 1
              ? 'lost the connection to the message broker node; failing over to the next node'
              : 'lost the connection to the message broker; reconnecting',
          );
      } catch (error) {
        if (stopping) break; // our own stop() cut the attempt short: not a failure to report
        if (!startSettled && fatalAtStart(error)) {
          // The configuration and the broker disagree in a way waiting cannot fix: stop the start.
          log.error({ reason: messageOf(error) }, 'the broker cannot take the configured topology');
          setState('closed');
          const model = connection;
          connection = undefined;
          if (model)
            await within(
              model.close().catch(() => {}),
              CLOSE_GRACE_MS,
              undefined,
            );
          firstAttemptDone(error);
          return;
        }
        failures += 1;
        setState(everConnected ? 'reconnecting' : 'connecting');
        const retryInMs = reconnectDelay(failures, initialDelayMs, maxDelayMs);
        if (error instanceof TopologyError || fatalAtStart(error)) {
          log.error(
            { reason: error.message, retryInMs },
            'the broker refused the configured topology; fix the broker or the configuration',
          );
        } else {
          log.warn(
            { reason: messageOf(error), attempt: failures, retryInMs },
            'could not connect to the message broker',
          );
        }
        firstAttemptDone();
        await pause(retryInMs);
        continue;
      }
      if (!stopping) await pause(reconnectDelay(0, initialDelayMs, maxDelayMs));
    }
  }

  return {
    get state() {
      return state;
    },
    get stopping() {
      return stopping;
    },
    get connection() {
      return connection;
    },
    get publishing() {
      return publishing;
    },
    get blockedBy() {
      return blockedBy;
    },
    onStateChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    start() {
      if (started) return started;
      setState('connecting');
      started = new Promise<void>((resolve, reject) => {
        const firstAttemptDone = (error?: unknown) => {
          startSettled = true;
          if (error) reject(error);
          else resolve();
        };
        loop = supervise(firstAttemptDone).catch((error: unknown) => {
          // Unreachable by design (every step is caught inside); never let it pass silently.
          log.error({ reason: messageOf(error) }, 'the broker connection supervisor stopped');
          resolve();
        });
      });
      return started;
    },
    async stop(drain) {
      stopping = true;
      // Let in-flight batches get their confirms while the channel is still open.
      await within(drain(), publishTimeoutMs, undefined);
      setState('closed');
      requestStop();
      const channel = publishing?.channel;
      const model = connection;
      publishing = undefined;
      connection = undefined;
      if (channel)
        await within(
          channel.close().catch(() => {}),
          CLOSE_GRACE_MS,
          undefined,
        );
      if (model)
        await within(
          model.close().catch(() => {}),
          CLOSE_GRACE_MS,
          undefined,
        );
      await loop;
      log.info('closed the connection to the message broker');
    },
  };
}

/** Errors of the first attempt that end the start instead of a retry (errors.ts says why for each). */
function fatalAtStart(error: unknown): error is QueueTypeMismatch | ShardPluginMissing {
  return error instanceof QueueTypeMismatch || error instanceof ShardPluginMissing;
}
