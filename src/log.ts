import { pino, type Logger, type DestinationStream } from 'pino';
import { prettyStream } from './log-pretty.js';

export type { Logger };

/**
 * Keys whose values are censored in a log object and in the objects it holds (one level down, and
 * a `headers` object there). Credentials reach the log only by accident (a header dump, an error
 * carrying a URL, a source's options); these make the accident harmless.
 */
const SECRET_KEYS = new Set([
  'authorization',
  'password',
  'apiKey',
  'secret',
  'token',
  'cookie',
  // Drop sources' secrets (SFTP keys, S3 credentials), should a source's options ever be logged.
  'privateKey',
  'passphrase',
  'secretAccessKey',
  'apiKeyHash',
  'apiKeyHashes',
]);
const HEADER_SECRETS = ['authorization', 'cookie'];

/** URLs are worth reading (where the service listens, which broker): only their credentials are hidden. */
const URL_KEYS = new Set(['url', 'broker']);

const REDACTED = '[redacted]';

/**
 * The censored values of one object's own keys, or undefined when it holds nothing to censor
 * (the common case: then nothing is copied).
 */
function censoredKeys(value: object): Record<string, unknown> | undefined {
  let changes: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const field = (value as Record<string, unknown>)[key];
    if (SECRET_KEYS.has(key)) (changes ??= {})[key] = REDACTED;
    else if (URL_KEYS.has(key)) {
      if (typeof field === 'string') {
        const safe = safeUrl(field);
        if (safe !== field) (changes ??= {})[key] = safe;
      }
    } else if (key === 'headers' && field !== null && typeof field === 'object') {
      const headers = field as Record<string, unknown>;
      if (HEADER_SECRETS.some((name) => Object.hasOwn(headers, name))) {
        const copy = { ...headers };
        for (const name of HEADER_SECRETS) if (Object.hasOwn(copy, name)) copy[name] = REDACTED;
        (changes ??= {})[key] = copy;
      }
    }
  }
  return changes;
}

/** A copy of `value` with `changes` applied; an error's copy stays an error of its type, message and stack kept. */
function withChanges(value: object, changes: Record<string, unknown>): object {
  if (!(value instanceof Error)) return { ...value, ...changes };
  const copy = Object.create(Object.getPrototypeOf(value)) as Record<string, unknown>;
  for (const key of Object.getOwnPropertyNames(value))
    copy[key] = (value as unknown as Record<string, unknown>)[key];
  return Object.assign(copy, changes);
}

/**
 * The log object (or a child's bindings) with credentials censored at its top level and one
 * level down. Hand-written rather than pino's `redact` with `*.key` paths: each wildcard path
 * walked every key of every line, which with thirteen of them cost ~15 µs a line (more than the
 * rest of the line), paid on every request and every delivered event.
 */
export function censor(object: Record<string, unknown>): Record<string, unknown> {
  let out = object;
  const top = censoredKeys(object);
  if (top) out = { ...object, ...top };
  for (const key of Object.keys(out)) {
    const value = out[key];
    if (value === null || typeof value !== 'object' || (top && key in top)) continue;
    const nested = censoredKeys(value);
    if (!nested) continue;
    if (out === object) out = { ...object };
    out[key] = withChanges(value, nested);
  }
  return out;
}

export type LogFormat = 'json' | 'pretty';

export interface LogOptions {
  /** @default 'info' */
  level?: string;
  /** `pretty`: readable lines for a terminal (development); `json` for collectors. @default 'json' */
  format?: LogFormat;
  /** Where lines go; tests pass a capture stream. @default stdout, buffered (see `stdoutDestination`) */
  destination?: DestinationStream;
  /** Told of each line dropped because stdout took nothing for a long while (metrics). */
  onDrop?: () => void;
}

/** Lines wait for a write until this many bytes gather… */
export const LOG_BUFFER_BYTES = 4096;
/** …or this many milliseconds pass, whichever comes first. */
export const LOG_FLUSH_MS = 100;
/** Lines waiting past this many bytes (nobody reads stdout) are dropped, not kept. */
export const LOG_MAX_PENDING_BYTES = 16 * 1024 * 1024;

/**
 * stdout for JSON lines, written from a buffer off the event loop. pino's own default writes each
 * line on its own through the libuv thread pool; at one line per 1-record batch, that round trip
 * (a pool thread's write, the wake-up of the event loop, a futex) cost more than a tenth of the
 * request's CPU. Here lines gather up to `LOG_BUFFER_BYTES` or `LOG_FLUSH_MS`, then go in one
 * write. An exit, a crash that reaches it included, writes what waits (pino flushes on exit); a
 * kill -9 loses at most the last `LOG_FLUSH_MS`. A stdout nobody reads (a stalled collector)
 * neither blocks the service nor grows its memory: lines past `LOG_MAX_PENDING_BYTES` are dropped
 * and told to `onDrop`.
 */
export function stdoutDestination({
  onDrop,
  dest = 1,
}: {
  onDrop?: () => void;
  /** Another file instead of stdout (the bench writes to /dev/null the way `serve` writes to stdout). */
  dest?: number | string;
} = {}): DestinationStream {
  const stream = pino.destination({
    dest,
    sync: false,
    minLength: LOG_BUFFER_BYTES,
    periodicFlush: LOG_FLUSH_MS,
    maxLength: LOG_MAX_PENDING_BYTES,
  });
  if (onDrop) stream.on('drop', onDrop);
  return stream;
}

/** The second whose ISO text `isoTime` holds, and that text up to the milliseconds. */
let isoSecond = Number.NaN;
let isoPrefix = '';

/**
 * pino's `isoTime` (`,"time":"2026-11-25T16:37:28.892Z"`) with the text up to the second made
 * once per second: `toISOString()` on every line was ~0.7 µs of a line's ~4.
 */
export function isoTime(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = `,"time":"${new Date(second * 1000).toISOString().slice(0, 20)}`;
  }
  const ms = now - second * 1000;
  return `${isoPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z"`;
}

export function createLogger(options: LogOptions = {}): Logger {
  const destination =
    options.format === 'pretty'
      ? prettyStream(options.destination ?? process.stdout)
      : (options.destination ??
        (options.level === 'silent' ? undefined : stdoutDestination({ onDrop: options.onDrop })));
  const root = pino(
    {
      level: options.level ?? 'info',
      base: { service: 'warehouse-ingest' },
      timestamp: isoTime,
      formatters: { level: (label) => ({ level: label }), log: censor },
    },
    destination,
  );
  // pino applies no formatter to a child's bindings: censor them on the way in. Every child is
  // made from its parent by prototype, so all of them, at any depth, find this `child`.
  const child = root.child;
  root.child = function censoredChild(this: Logger, bindings, childOptions) {
    return child.call(this, censor(bindings), childOptions);
  } as typeof root.child;
  return root;
}

/**
 * Strips the user-info part of a URL so a broker address can be logged safely; a URL without
 * credentials is returned as it was given.
 */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = '***';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '[unparseable url]';
  }
}
