import { Redis } from 'ioredis';

/**
 * One command to one Redis server or sentinel on loopback, on a connection of its own that never
 * retries: for tests that look at (or steer) a Redis Sentinel set from outside the service.
 */
export async function askRedis(port: number, command: readonly string[]): Promise<unknown> {
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await redis.call(command[0]!, ...command.slice(1));
  } finally {
    redis.disconnect();
  }
}

/** One field of a server's `INFO replication`, or undefined while it does not answer. */
export async function replicationField(port: number, field: string): Promise<string | undefined> {
  try {
    const text = String(await askRedis(port, ['info', 'replication']));
    return new RegExp(`^${field}:(.*)$`, 'm').exec(text)?.[1]?.trim();
  } catch {
    return undefined;
  }
}
