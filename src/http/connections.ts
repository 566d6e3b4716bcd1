import type net from 'node:net';
import type { Logger } from '../log.js';
import type { ConnectionMetrics, DropReason, ListenerName } from '../metrics.js';

export interface ConnectionLimit {
  readonly listener: ListenerName;
  /** Node's `server.maxConnections`: a connection past it is closed as soon as it is accepted. */
  readonly maxConnections: number;
  /** TLS: the listener can also drop a handshake that did not finish in time. */
  readonly tls: boolean;
}

/** Drops are logged at once, then at most this often per reason, with how many there were. */
const LOG_EVERY_MS = 60_000;

const FIELD: Record<ListenerName, string> = {
  public: 'http.maxConnections',
  admin: 'admin.maxConnections',
};

/**
 * Bounds the connections `server` holds at once, and reports each connection the service closes
 * itself: counted by reason, logged a line a minute at most. Without the bound, clients that hold
 * connections (a stalled TLS handshake, an idle socket) take descriptors until the process has
 * none left, and then the admin listener, the broker and the drops fail too. Returns what
 * reports one drop (`clientError` calls it; `limit` is reported here, from Node's `drop` event).
 */
export function guardConnections(
  server: net.Server,
  limit: ConnectionLimit,
  deps: { readonly log: Logger; readonly metrics: ConnectionMetrics },
): (reason: DropReason, code?: string) => void {
  const { listener, maxConnections } = limit;
  server.maxConnections = maxConnections;
  const reasons: DropReason[] = limit.tls
    ? ['limit', 'handshake-timeout', 'client-error']
    : ['limit', 'client-error'];
  const counted = deps.metrics.listener(listener, server, reasons);
  const log = deps.log.child({ listener });
  const lines: Record<DropReason, ReturnType<typeof perMinute>> = {
    limit: perMinute((connections) =>
      log.warn(
        { reason: 'limit', connections, maxConnections },
        `connections refused: the ${listener} listener holds ${FIELD[listener]} (${maxConnections})`,
      ),
    ),
    'handshake-timeout': perMinute((connections) =>
      log.info(
        { reason: 'handshake-timeout', connections },
        'connections closed: TLS handshake not finished in time',
      ),
    ),
    'client-error': perMinute((connections, code) =>
      log.info(
        { reason: 'client-error', connections, lastCode: code },
        'connections closed after a client error (not TLS, not HTTP, too large or too slow)',
      ),
    ),
  };
  server.on('drop', () => dropped('limit'));
  // The count since the last line is not lost at a stop.
  server.once('close', () => {
    for (const line of Object.values(lines)) line.close();
  });
  function dropped(reason: DropReason, code?: string): void {
    counted.dropped(reason);
    lines[reason].note(code);
  }
  return dropped;
}

/**
 * A log line for events that may come by the thousand (an attack): the first is written at
 * once, the next ones as one line with their count after a minute, and so on while they last.
 */
function perMinute(write: (connections: number, code: string | undefined) => void) {
  let pending = 0;
  let lastCode: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  const writePending = () => {
    if (pending === 0) return false;
    write(pending, lastCode);
    pending = 0;
    return true;
  };
  // While events keep coming, a line a minute; after a quiet minute, the next one is written at once.
  const tick = () => {
    timer = writePending() ? setTimeout(tick, LOG_EVERY_MS).unref() : undefined;
  };
  return {
    note(code: string | undefined) {
      pending += 1;
      lastCode = code;
      if (!timer) tick();
    },
    close() {
      clearTimeout(timer);
      timer = undefined;
      writePending();
    },
  };
}
