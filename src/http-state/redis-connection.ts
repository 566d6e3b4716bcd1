import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { reconnectDelay } from '../backoff.js';
import type { Logger } from '../log.js';
import { REPORTS_REPLICAS, SCRIPTS, type ScriptName } from './redis-scripts.js';
import { type RedisSentinel, sentinelOptions, serverAddress } from './redis-sentinel.js';
import { SharedStateUnavailable } from './state.js';

/** Where Redis is: a URL, or a master found through Redis Sentinel (redis-sentinel.ts). */
export type RedisTarget =
  | {
      /** `redis://[:password@]host:port[/db]` or `rediss://` (TLS). */
      readonly url: string;
      readonly sentinel?: undefined;
    }
  | { readonly sentinel: RedisSentinel; readonly url?: undefined };

/**
 * The one connection of the Redis state, used so that a fault in it can neither end the process
 * nor hand a call another call's answer (docs/operations-instances.md#when-redis-cannot-be-reached):
 *
 * - A call is sent only while the connection is ready; otherwise it fails at once (no offline
 *   queue, nothing resent after a reconnect, no command written during the handshake).
 * - Every call is a script of redis-scripts.ts that echoes a nonce of the call first: a reply
 *   without its call's nonce means replies are out of step with commands.
 * - Then (or on ioredis's own "Command queue state error", or a call not answered within the
 *   time-out) the connection is thrown away with every call on it, which fail, and a new one is
 *   made: a desynchronised or silent connection is never used again.
 * - Behind Sentinel, a claim or an answer is given only once every replica of the master has it
 *   (WAIT): replication is asynchronous, and a write the promoted replica never got would let a
 *   retry run its batch again after a failover.
 */
export type RedisConnectionOptions = RedisTarget & {
  /** Overrides the URL's password (read from a file). */
  readonly password?: string;
  /** A call not answered within this fails, and its connection is replaced. */
  readonly commandTimeoutMs: number;
  /** Where the store is, for log lines (never the password). */
  readonly where: string;
  readonly log: Logger;
  /** Called each time a connection becomes ready (the first and every new one). */
  readonly onReady?: () => void;
};

/**
 * A call that was written but got no answer of its own (time-out, connection lost or replaced,
 * reply out of step): Redis may or may not have run it.
 */
export class Unanswered extends SharedStateUnavailable {}

/**
 * A write the master made but not every replica acknowledged in time (behind Sentinel): a
 * failover now could lose it, so it is not relied on.
 */
export class NotReplicated extends Unanswered {}

export interface RedisConnection {
  /**
   * Runs a script on `key`; gives its reply after the nonce (and the replica count of
   * REPORTS_REPLICAS). Throws SharedStateUnavailable.
   */
  run(script: ScriptName, key: string, args: ReadonlyArray<string | number>): Promise<unknown[]>;
  /** Ready for calls now. */
  readonly reachable: boolean;
  /** A connection was ready at least once since start-up. */
  readonly reachedOnce: boolean;
  /**
   * The first connection (start-up). Resolves either way: when Redis cannot be reached, the
   * warning names where and why, and connections are tried again with back-off until it is.
   */
  open(): Promise<void>;
  close(): Promise<void>;
}

type ScriptCall = (key: string, nonce: string, ...args: Array<string | number>) => Promise<unknown>;

/** ioredis's refusal of a command it did not write (the connection went away meanwhile). */
const NOT_WRITTEN = /Stream isn't writeable/;

/** Errors ioredis reports when replies no longer match its commands, or it cannot parse them. */
const OUT_OF_STEP = /Command queue state error|Please report this/;

/** A write refused by a replica: behind Sentinel, the connection is on a master since demoted. */
const DEMOTED = /^READONLY/;

export function createRedisConnection(options: RedisConnectionOptions): RedisConnection {
  const { log, where } = options;
  let closing = false;
  /** The first attempt (`open`) is over: from here on, outages are reported and ends replaced. */
  let started = false;
  /** A connection was ready once (readiness waits for it: a wrong address is found at deployment). */
  let reachedOnce = false;
  /** The state is reported unreachable (one warning per outage). */
  let outage = false;
  /** Connections replaced in a row without a call answered since: spaces the new ones. */
  let replaced = 0;
  /** The server the last ready connection was on: a change (a failover) is logged. */
  let server: string | undefined;
  /** Replicas have not acknowledged a write in time since the last that they did (one warning). */
  let lagging = false;
  /** WAIT gives up before the command time-out would replace the connection. */
  const waitMs = Math.max(1, Math.floor(options.commandTimeoutMs / 2));

  const unreachable = (redis: Redis, error: Error) => {
    if (outage || !started || redis !== current || closing) return;
    outage = true;
    log.warn(
      { sharedState: where, error: error.message },
      'shared state unreachable: Idempotency-Key requests answered 503, limits kept per instance meanwhile',
    );
  };

  const guarded = (handle: () => void) => {
    try {
      handle();
    } catch (error) {
      log.error({ sharedState: where, err: error }, 'shared state: a connection event failed');
    }
  };

  const connect = (): Redis => {
    const common: RedisOptions = {
      ...(options.password !== undefined && { password: options.password }),
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      autoResubscribe: false,
      commandTimeout: options.commandTimeoutMs,
      connectTimeout: Math.max(1000, options.commandTimeoutMs * 5),
      retryStrategy: (attempt) => reconnectDelay(attempt, 100, 5000),
    };
    const redis =
      options.sentinel === undefined
        ? new Redis(options.url, common)
        : new Redis({
            ...common,
            ...sentinelOptions(options.sentinel, options.commandTimeoutMs, () => started),
          });
    for (const [name, lua] of Object.entries(SCRIPTS))
      redis.defineCommand(name, { lua, numberOfKeys: 1 });
    // Listeners must not throw: ioredis calls some of them while it reads a reply.
    redis.on('error', (error: Error) =>
      guarded(() => {
        if (OUT_OF_STEP.test(error.message)) replace(redis, error.message);
        else unreachable(redis, error);
      }),
    );
    // ioredis ends a client whose reconnect failed inside its connector, with no try left: behind
    // Sentinel, a `+switch-master` announced while a reconnect asks a sentinel where the master
    // is closes the connector under that reconnect ("Connection is closed."). After the first
    // attempt, only a connection this module retired or closed may end; any other is replaced
    // at once (during it, `open` reports the failure and replaces it).
    redis.on('end', () =>
      guarded(() => {
        if (started && !retired.has(redis)) replace(redis, 'ioredis stopped reconnecting');
      }),
    );
    redis.on('ready', () =>
      guarded(() => {
        if (redis !== current) return;
        const now = serverAddress(redis);
        if (options.sentinel && now !== server)
          log.info({ sharedState: where, master: now }, `shared state: on the master at ${now}`);
        server = now;
        if (outage)
          log.info(
            { sharedState: where },
            reachedOnce ? 'shared state reachable again' : 'shared state reachable',
          );
        outage = false;
        reachedOnce = true;
        options.onReady?.();
      }),
    );
    return redis;
  };

  /** Connections this module dropped (replaced, or closed): their end is expected. */
  const retired = new WeakSet<Redis>();
  let current = connect();

  /** Drops `redis` (its calls fail now) and makes a new connection, unless that was done already. */
  function replace(redis: Redis, reason: string): void {
    if (redis !== current || closing) return;
    log.error({ sharedState: where, reason }, 'shared state connection reset');
    unreachable(redis, new Error(reason));
    renew(redis);
  }

  /** Retires `redis` and connects a new one after a back-off (spaced while it keeps happening). */
  function renew(redis: Redis): void {
    retired.add(redis);
    redis.disconnect();
    redis.stream?.destroy();
    const next = connect();
    current = next;
    replaced += 1;
    setTimeout(
      () => {
        if (next === current && !closing) next.connect().catch(() => undefined);
      },
      reconnectDelay(replaced, 50, 5000),
    ).unref();
  }

  /** Waits until `replicas` replicas have this connection's writes, or throws NotReplicated. */
  const replicated = async (redis: Redis, replicas: number, script: ScriptName) => {
    let acknowledged: unknown;
    try {
      acknowledged = await redis.call('wait', replicas, waitMs);
    } catch (error) {
      if ((error as Error).message === 'Command timed out') replace(redis, 'Command timed out');
      else unreachable(redis, error as Error);
      return fail(error, true);
    }
    if (typeof acknowledged !== 'number') {
      replace(redis, `a reply to WAIT after ${script} was not a count`);
      return fail(new Error('reply out of step with its command'), true);
    }
    if (acknowledged < replicas) {
      if (!lagging)
        log.warn(
          { sharedState: where, replicas, acknowledged, waitMs },
          'shared state: replicas do not acknowledge writes in time; Idempotency-Key requests answered 503 meanwhile',
        );
      lagging = true;
      throw new NotReplicated(
        `the shared state at ${where}: ${acknowledged} of ${replicas} replica(s) acknowledged within ${waitMs} ms`,
      );
    }
    if (lagging)
      log.info({ sharedState: where }, 'shared state: replicas acknowledge writes again');
    lagging = false;
  };

  const fail = (error: unknown, sent: boolean) => {
    const Failure = sent ? Unanswered : SharedStateUnavailable;
    throw new Failure(`the shared state at ${where} did not answer`, { cause: error });
  };

  return {
    get reachable() {
      return current.status === 'ready';
    },
    get reachedOnce() {
      return reachedOnce;
    },
    async run(script, key, args) {
      const redis = current;
      if (redis.status !== 'ready') fail(new Error(`connection ${redis.status}`), false);
      const nonce = randomUUID();
      let reply: unknown;
      try {
        reply = await (redis as unknown as Record<ScriptName, ScriptCall>)[script](
          key,
          nonce,
          ...args,
        );
      } catch (error) {
        const { name, message } = error as Error;
        if (message === 'Command timed out') replace(redis, 'Command timed out');
        else if (options.sentinel && DEMOTED.test(message))
          replace(redis, 'the server is a replica now: asking the sentinels for the master');
        else if (name !== 'ReplyError') unreachable(redis, error as Error);
        // Answered by Redis (an error reply), or refused by ioredis before it was written.
        return fail(error, name !== 'ReplyError' && !NOT_WRITTEN.test(message));
      }
      if (!Array.isArray(reply) || reply[0] !== nonce) {
        replace(redis, `a reply to ${script} did not carry its nonce`);
        return fail(new Error('reply out of step with its command'), true);
      }
      replaced = 0;
      if (!REPORTS_REPLICAS.has(script)) return reply.slice(1);
      const [replicas, ...rest] = reply.slice(1);
      if (options.sentinel && Number(replicas) > 0)
        await replicated(redis, Number(replicas), script);
      return rest;
    },
    async open() {
      const first = current;
      try {
        await first.connect();
      } catch (error) {
        // Not fatal (a service started before its Redis, or during an outage, must come up): one
        // warning, then tries with back-off on a fresh connection, which the first may not make
        // (behind Sentinel it asked each sentinel once and ended).
        outage = true;
        log.warn(
          { sharedState: where, error: (error as Error).message },
          'cannot reach the shared state at start-up: /readyz answers 503 and Idempotency-Key requests 503 until it is reached; retrying',
        );
        renew(first);
      } finally {
        started = true;
      }
    },
    async close() {
      closing = true;
      retired.add(current);
      try {
        await current.quit();
      } catch {
        current.disconnect();
      }
    },
  };
}
