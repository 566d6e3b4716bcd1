import { pino, type Logger, type DestinationStream } from 'pino';
import { prettyStream } from './log-pretty.js';

export type { Logger };

/**
 * Paths redacted wherever they appear in a log object. Credentials reach the log only by
 * accident (a header dump, an error carrying a URL); these make the accident harmless.
 */
const REDACT = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'password',
  '*.password',
  'apiKey',
  '*.apiKey',
  'secret',
  '*.secret',
  'token',
  '*.token',
  'cookie',
  '*.headers.authorization',
  '*.headers.cookie',
  // Drop sources' secrets (SFTP keys, S3 credentials), should a source's options ever be logged.
  'privateKey',
  '*.privateKey',
  'passphrase',
  '*.passphrase',
  'secretAccessKey',
  '*.secretAccessKey',
  'apiKeyHash',
  '*.apiKeyHash',
];

/** URLs are worth reading (where the service listens, which broker): only their credentials are hidden. */
const URLS = ['url', '*.url', 'broker', '*.broker'];

function censor(value: unknown, path: string[]): unknown {
  const key = path[path.length - 1];
  if (key === 'url' || key === 'broker') return typeof value === 'string' ? safeUrl(value) : value;
  return '[redacted]';
}

export type LogFormat = 'json' | 'pretty';

export interface LogOptions {
  /** @default 'info' */
  level?: string;
  /** `pretty`: readable lines for a terminal (development); `json` for collectors. @default 'json' */
  format?: LogFormat;
  /** Where lines go; tests pass a capture stream. @default stdout */
  destination?: DestinationStream;
}

export function createLogger(options: LogOptions = {}): Logger {
  const destination =
    options.format === 'pretty'
      ? prettyStream(options.destination ?? process.stdout)
      : options.destination;
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'warehouse-ingest' },
      redact: { paths: [...REDACT, ...URLS], censor },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
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
