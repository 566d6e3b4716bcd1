import type { DestinationStream } from 'pino';

/**
 * `LOG_FORMAT=pretty`: each JSON line as `12:00:01.123 INFO  message  key=value …`, for a person
 * at a terminal. Built in (a few lines) rather than pino-pretty, so production depends on no
 * development package; collectors get the JSON lines.
 */
const HIDDEN = new Set(['time', 'level', 'msg', 'service', 'pid', 'hostname']);

export function prettyLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 23) : '';
  const level = String(entry.level ?? '')
    .toUpperCase()
    .padEnd(5);
  const fields = Object.entries(entry)
    .filter(([key]) => !HIDDEN.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  const stack =
    typeof entry.err === 'object' && entry.err !== null && 'stack' in entry.err
      ? `\n${String((entry.err as { stack: unknown }).stack)}`
      : '';
  return `${time} ${level} ${String(entry.msg ?? '')}${fields.length ? `  ${fields.join(' ')}` : ''}${stack}\n`;
}

export function prettyStream(out: { write(text: string): unknown }): DestinationStream {
  return {
    write(text: string) {
      for (const line of text.split('\n')) if (line) out.write(prettyLine(line));
    },
  };
}
