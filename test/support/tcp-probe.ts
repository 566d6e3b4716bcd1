import net from 'node:net';

/**
 * Whether something accepts TCP connections on `host:port` within `timeoutMs` (a service the test
 * set-up needs, a port it wants free, a node it brought back).
 */
export function acceptsConnections(
  port: number,
  { host = '127.0.0.1', timeoutMs = 1000 }: { host?: string; timeoutMs?: number } = {},
): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(timeoutMs);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}
