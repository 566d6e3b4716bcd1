import http2 from 'node:http2';
import type { Logger } from '../log.js';

/**
 * HTTP/2 over TLS beside HTTP/1.1 (`http.tls.http2`): one node:http2 secure server that offers
 * ALPN `h2` and `http/1.1`. A client that asks for neither, or for `http/1.1`, is served by
 * node:http's own connection handling, the same parser and the same limits as node:https; a
 * client that asks for `h2` gets a session whose streams are bounded here.
 */

/**
 * Streams one HTTP/2 connection may have open at once. Each is a request, so without it one
 * connection (one of `http.maxConnections`) could carry any number of slow requests; a business's
 * batches in flight are bounded apart (`abuse.maxInFlightBatches`).
 */
export const H2_MAX_CONCURRENT_STREAMS = 32;

export interface Http2Limits {
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly maxHeaderBytes: number;
  readonly connectionsCheckingIntervalMs: number;
  readonly handshakeTimeoutMs: number;
}

/** The secure server, answering HTTP/1.1 and h2 with `handler`, under `limits`. */
export function createHttp2Server(
  tls: { readonly cert: Buffer; readonly key: Buffer },
  limits: Http2Limits,
  handler: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
  log: Logger,
): http2.Http2SecureServer {
  const server = http2.createSecureServer(
    {
      ...tls,
      allowHTTP1: true,
      handshakeTimeout: limits.handshakeTimeoutMs,
      settings: {
        maxConcurrentStreams: H2_MAX_CONCURRENT_STREAMS,
        // HPACK-decoded header list: the counterpart of HTTP/1.1's `maxHeaderSize`.
        maxHeaderListSize: limits.maxHeaderBytes,
      },
    },
    handler,
  );
  // Node (20, as checked) takes none of these as options of an HTTP/2 server, yet its HTTP/1.1
  // connections read them from the server (defaults: 300 s, 60 s, 16 KiB, 30 s):
  // test/http/tls.test.ts checks the 431 and the 408 on that path.
  Object.assign(server, {
    requestTimeout: limits.requestTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    maxHeaderSize: limits.maxHeaderBytes,
    connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
  });
  // HTTP/1.1's request timeout does not reach an h2 stream: a stream not received whole in time
  // is reset (no answer can follow a body still arriving), as the 408 closes an HTTP/1.1 connection.
  server.on('stream', (stream) => {
    const deadline = setTimeout(() => {
      log.info(
        { timeoutMs: limits.requestTimeoutMs },
        'HTTP/2 request not received in time: stream reset',
      );
      stream.close(http2.constants.NGHTTP2_CANCEL);
    }, limits.requestTimeoutMs);
    deadline.unref();
    const done = () => clearTimeout(deadline);
    stream.once('end', done); // its body (or none) was received whole
    stream.once('close', done);
  });
  return server;
}

/** The open h2 sessions of `server`, so that a drain can send each its GOAWAY. */
export function trackSessions(server: http2.Http2SecureServer): Set<http2.ServerHttp2Session> {
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  return sessions;
}
