import type { Redis, RedisOptions } from 'ioredis';
import { reconnectDelay } from '../backoff.js';

/**
 * Redis behind Sentinel: the sentinels say which server is the master of `masterName`, and
 * ioredis asks them again at every reconnect, so after a failover the state follows the promoted
 * replica. What the connection does meanwhile (calls fail at once, keyed requests get `503`) is
 * redis-connection.ts's, as for any outage.
 */
export interface RedisSentinel {
  /** `host:port` each (an IPv6 address in brackets); any of them may be down. */
  readonly sentinels: readonly string[];
  /** The name the sentinels monitor (`sentinel monitor <name> …`). */
  readonly masterName: string;
  /** The sentinels' own password (`requirepass` on them), when they require one. */
  readonly sentinelPassword?: string;
  /** The ACL user on the master (its password is the state's `password`). @default the default user */
  readonly username?: string;
  /** The database number on the master. @default 0 */
  readonly db?: number;
}

/** `host:port` → ioredis's endpoint (brackets of an IPv6 address removed). */
export function sentinelEndpoint(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return {
    host: address.slice(0, at).replace(/^\[(.*)\]$/, '$1'),
    port: Number(address.slice(at + 1)),
  };
}

/** Where the store is, for logs and messages: the master's name and the sentinels, no password. */
export function sentinelLocation(sentinel: RedisSentinel): string {
  return `sentinel://${sentinel.sentinels.join(',')}/${sentinel.masterName}`;
}

/**
 * ioredis's options for a master found through the sentinels. `firstConnected` tells whether the
 * state was ever reachable: before, the sentinels are asked once each and the start fails when
 * none answers (as an unreachable URL fails it); after, they are asked again with back-off, for
 * ever. Reconnects back off to 1 s at most. The failover detector (a subscription to `+switch-master` on the sentinels) drops the
 * connection as soon as they announce a new master, rather than when the old one stops answering.
 */
export function sentinelOptions(
  sentinel: RedisSentinel,
  commandTimeoutMs: number,
  firstConnected: () => boolean,
): RedisOptions {
  return {
    sentinels: sentinel.sentinels.map(sentinelEndpoint),
    name: sentinel.masterName,
    role: 'master',
    ...(sentinel.sentinelPassword !== undefined && { sentinelPassword: sentinel.sentinelPassword }),
    ...(sentinel.username !== undefined && { username: sentinel.username }),
    ...(sentinel.db !== undefined && { db: sentinel.db }),
    sentinelCommandTimeout: commandTimeoutMs,
    // A failover takes seconds, and each try asks a sentinel where the master is now: tries stay
    // at most a second apart, so the promoted replica is found soon after it is named.
    retryStrategy: (attempt) => reconnectDelay(attempt, 100, 1000),
    sentinelRetryStrategy: (attempt) =>
      firstConnected() ? reconnectDelay(attempt, 100, 5000) : null,
    failoverDetector: true,
  };
}

/** The server a connection is on (`host:port`, as the socket sees it), or undefined. */
export function serverAddress(redis: Redis): string | undefined {
  const { remoteAddress, remotePort } = redis.stream ?? {};
  if (!remoteAddress || !remotePort) return undefined;
  return remoteAddress.includes(':')
    ? `[${remoteAddress}]:${remotePort}`
    : `${remoteAddress}:${remotePort}`;
}
