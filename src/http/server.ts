import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import type http2 from 'node:http2';
import https from 'node:https';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { toNodeHandler, type H3 } from 'h3';
import {
  HeaderFieldsTooLarge,
  MalformedBody,
  RequestTimeout,
  toProblem,
  PROBLEM_MEDIA_TYPE,
  type IngestError,
} from '../errors.js';
import type { Logger } from '../log.js';
import { readTlsPair } from './tls-files.js';
import type { ConnectionMetrics, DropReason, ListenerName } from '../metrics.js';
import { guardConnections } from './connections.js';
import { createHttp2Server, trackSessions } from './http2.js';

export interface HttpServerOptions {
  /** Which listener this is: the `listener` label of its connection metrics and log lines. */
  readonly listener: ListenerName;
  /** Connections held at once; Node closes any past it as soon as it is accepted. */
  readonly maxConnections: number;
  readonly requestTimeoutMs: number;
  readonly maxHeaderBytes: number;
  /**
   * PEM files: with them, HTTPS (HTTP/1.1 over TLS) under the same limits; with `http2`, ALPN
   * offers `h2` too. @default plain HTTP
   */
  readonly tls?:
    | { readonly cert: string; readonly key: string; readonly http2?: boolean | undefined }
    | undefined;
}

/** What the partner-facing and admin listeners are: node:http, node:https or node:http2's secure server. */
type NodeServer = net.Server &
  Partial<Pick<http.Server, 'closeIdleConnections' | 'closeAllConnections'>>;

/** The server, and its way to stop: see `drain`. */
export interface HttpServer extends NodeServer {
  /**
   * Stops taking connections (new ones are refused) and lets the requests in flight finish: each
   * answer still to be given closes its connection (`Connection: close`), and keep-alive
   * connections between requests are closed, so `closed` resolves once the last answer is out.
   * `force()` closes whatever is left (the grace time is over).
   */
  drain(): { readonly closed: Promise<void>; force(): void };
  /**
   * HTTPS: reads the certificate and key files again and serves them to every new handshake
   * (connections already open keep theirs). Returns how to apply them, so a reload that fails
   * elsewhere keeps the old pair; throws `ConfigError` (naming file and field) when they cannot
   * be read, or do not form a pair. Undefined for plain HTTP.
   */
  readonly prepareTlsReload?: (tls: { readonly cert: string; readonly key: string }) => {
    apply(): void;
    readonly certificate: CertificateSummary;
  };
}

/** What a log line says of a certificate: never the key. */
export interface CertificateSummary {
  readonly subject: string;
  readonly validTo: string;
  readonly fingerprint256: string;
}

/** An answer in progress, HTTP/1.1 (node:http) or h2 (node:http2's compatibility API). */
type Answer = (http.ServerResponse | http2.Http2ServerResponse) & { shouldKeepAlive?: boolean };

/** While draining, idle keep-alive connections are looked for this often. */
const DRAIN_SWEEP_MS = 100;

/**
 * After a problem answer before routing, how long the client has to read it and close its side;
 * then the socket is destroyed (a client that neither reads nor closes would hold it for ever).
 */
const ANSWER_LINGER_MS = 5000;

/**
 * The node:http server around the app. Errors Node detects before (or outside) the app —
 * a header section over `maxHeaderBytes`, a request not complete within `requestTimeoutMs`,
 * bytes that are not HTTP — are answered as problem details too, not with Node's bare status line,
 * and the connection is closed after. A TLS handshake that fails or does not finish in time gets
 * no answer: its socket is destroyed. The connections held at once are bounded (`guardConnections`).
 */
export function createHttpServer(
  app: H3,
  options: HttpServerOptions,
  deps: { readonly log: Logger; readonly metrics: ConnectionMetrics },
): HttpServer {
  const { log } = deps;
  const limits: http.ServerOptions = {
    requestTimeout: options.requestTimeoutMs,
    headersTimeout: Math.min(options.requestTimeoutMs, 60_000),
    maxHeaderSize: options.maxHeaderBytes,
    // Node looks for timed-out requests only this often (30 s by default): a timeout is honoured within it.
    connectionsCheckingInterval: Math.max(
      100,
      Math.min(1000, Math.floor(options.requestTimeoutMs / 4)),
    ),
  };
  const handshakeTimeout = Math.min(options.requestTimeoutMs, 60_000);
  // node:https is node:http over TLS: the same limits, the same problem answers, the same drain.
  // With `http2`, node:http2's secure server hands HTTP/1.1 connections to that same node:http code.
  let sessions: Set<http2.ServerHttp2Session> | undefined;
  let server: NodeServer;
  if (!options.tls) server = http.createServer(limits, toNodeHandler(app));
  else if (options.tls.http2) {
    const secure = createHttp2Server(
      readTlsPair(options.tls),
      {
        requestTimeoutMs: options.requestTimeoutMs,
        headersTimeoutMs: Math.min(options.requestTimeoutMs, 60_000),
        maxHeaderBytes: options.maxHeaderBytes,
        connectionsCheckingIntervalMs: limits.connectionsCheckingInterval ?? 1000,
        handshakeTimeoutMs: handshakeTimeout,
      },
      toNodeHandler(app),
      log,
    );
    sessions = trackSessions(secure);
    server = secure;
  } else
    server = https.createServer(
      {
        ...limits,
        ...readTlsPair(options.tls),
        // A client that never finishes its handshake holds a socket like a slow request does
        // (`clientError` destroys it then).
        handshakeTimeout,
      },
      toNodeHandler(app),
    );
  // Answers not yet given, so that a drain can make each one the last of its connection.
  const unanswered = new Set<Answer>();
  let draining = false;
  // Before the app's listener: an answer the app gives at once must already see the flag.
  server.prependListener('request', (_req: unknown, res: Answer) => {
    if (draining) res.shouldKeepAlive = false; // an h2 answer has no such flag: its session's GOAWAY does it
    unanswered.add(res);
    res.once('close', () => unanswered.delete(res));
  });
  const dropped = guardConnections(
    server,
    { listener: options.listener, maxConnections: options.maxConnections, tls: !!options.tls },
    deps,
  );
  // TLS: the sockets whose handshake is done, the only ones an HTTP answer can be written to, and
  // every socket still open (a handshake in progress is not an HTTP connection yet: only a
  // forced drain closes it before its handshake timeout).
  const secured = new WeakSet<Duplex>();
  const sockets = new Set<Duplex>();
  if (options.tls) {
    server.prependListener('secureConnection', (socket: Duplex) => secured.add(socket));
    server.on('connection', (socket: Duplex) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
  }
  // Node hands the socket over with the error: whatever happens, it is closed here.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || error.code === 'EPIPE') {
      socket.destroy(); // the client left: nothing was refused, nothing to answer
      return;
    }
    dropped(dropReason(error), error.code);
    // A TLS socket whose handshake is not done cannot carry an answer: a write there waits for
    // that handshake for ever, and so would the socket.
    const answerable = !options.tls || secured.has(socket);
    const problem = answerable ? clientProblem(error, options) : undefined;
    // Node's own handler checks the same thing: once the app has started its answer, the
    // connection can only be closed.
    const inProgress = (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
    if (!problem || !socket.writable || inProgress?.headersSent) {
      socket.destroy();
      return;
    }
    log.info({ status: problem.status, code: error.code }, 'request refused before routing');
    const { problem: body, headers } = toProblem(problem);
    const text = JSON.stringify(body);
    const lines = [
      `HTTP/1.1 ${body.status} ${body.title}`,
      `content-type: ${PROBLEM_MEDIA_TYPE}`,
      `content-length: ${Buffer.byteLength(text)}`,
      'cache-control: no-store',
      'connection: close',
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ];
    socket.end(`${lines.join('\r\n')}\r\n\r\n${text}`);
    const linger = setTimeout(() => socket.destroy(), ANSWER_LINGER_MS).unref();
    socket.once('close', () => clearTimeout(linger));
  });
  const prepareTlsReload =
    server instanceof tls.Server
      ? (files: { readonly cert: string; readonly key: string }) => {
          // Refuses a key that does not match the certificate, before anything is swapped.
          const pair = readTlsPair(files);
          const x509 = new X509Certificate(pair.cert);
          return {
            apply: () => server.setSecureContext(pair),
            certificate: {
              subject: x509.subject.replace(/\n/g, ', '),
              validTo: x509.validTo,
              fingerprint256: x509.fingerprint256,
            },
          };
        }
      : undefined;
  return Object.assign(server, {
    ...(prepareTlsReload ? { prepareTlsReload } : {}),
    drain() {
      draining = true;
      for (const res of unanswered) if (!res.headersSent) res.shouldKeepAlive = false;
      // h2: a GOAWAY, then each session closes once its streams in flight are answered.
      for (const session of sessions ?? []) session.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // close() closes the connections idle now; an answer whose headers were already out leaves its connection idle later.
      const sweep = setInterval(() => server.closeIdleConnections?.(), DRAIN_SWEEP_MS);
      void closed.finally(() => clearInterval(sweep));
      const force = () => {
        server.closeAllConnections?.();
        for (const session of sessions ?? []) session.destroy();
        for (const socket of sockets) socket.destroy();
      };
      return { closed, force };
    },
  });
}

function dropReason(error: NodeJS.ErrnoException): DropReason {
  return error.code === 'ERR_TLS_HANDSHAKE_TIMEOUT' ? 'handshake-timeout' : 'client-error';
}

/** The answer to an HTTP-level error (llhttp's `HPE_*`, Node's time-outs); none to a TLS one. */
function clientProblem(
  error: NodeJS.ErrnoException,
  options: HttpServerOptions,
): IngestError | undefined {
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return new HeaderFieldsTooLarge({
      detail: `The request's header section exceeds the limit of ${options.maxHeaderBytes} bytes.`,
    });
  }
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT' || error.code === 'ERR_HTTP_HEADERS_TIMEOUT') {
    return new RequestTimeout({
      detail: `The request was not received completely within ${options.requestTimeoutMs} ms.`,
    });
  }
  if (error.code?.startsWith('HPE_')) {
    return new MalformedBody({ detail: 'The request is not well-formed HTTP/1.1.' });
  }
  return undefined;
}

/** The server cannot take the configured address (in use, not permitted, no such interface). */
export class ListenError extends Error {
  override readonly name = 'ListenError';
}

/**
 * Binds `host:port` and resolves with the URL to reach it; rejects with `ListenError` naming the
 * address when it cannot (never falls back to another port: an operator's port is a contract).
 */
export function listen(server: net.Server, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) =>
      reject(
        new ListenError(
          `cannot listen on ${host}:${port}: ${error.code === 'EADDRINUSE' ? 'the address is already in use' : (error.code ?? error.message)}`,
          { cause: error },
        ),
      );
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      const bound = server.address();
      const actual = typeof bound === 'object' && bound ? bound.port : port;
      // A wildcard address is reached through loopback from this machine.
      const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
      const scheme = server instanceof tls.Server ? 'https' : 'http';
      resolve(`${scheme}://${shown.includes(':') ? `[${shown}]` : shown}:${actual}`);
    });
  });
}
