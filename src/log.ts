import { pino, type Logger, type DestinationStream } from 'pino';

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
  'url',
  '*.url',
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

export interface LogOptions {
  /** @default 'info' */
  level?: string;
  /** Where lines go; tests pass a capture stream. @default stdout */
  destination?: DestinationStream;
}

export function createLogger(options: LogOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'warehouse-ingest' },
      redact: { paths: REDACT, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination,
  );
}

/** Strips the user-info part of a URL so a broker address can be logged safely. */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = parsed.username ? '***' : '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '[unparseable url]';
  }
}
