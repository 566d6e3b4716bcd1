import type { DestinationStream } from 'pino';
import { createLogger, type Logger } from '../../src/log.js';
import type { OutboundMessage } from '../../src/publish/publisher.js';
import { uniqueName } from '../support/broker.js';

/** A debug-level logger whose lines the test can read (to assert on state changes and on secrets). */
export function captureLog(): {
  log: Logger;
  text: () => string;
  lines: () => Array<Record<string, unknown>>;
} {
  const chunks: string[] = [];
  const destination: DestinationStream = { write: (line: string) => void chunks.push(line) };
  return {
    log: createLogger({ level: 'debug', destination }),
    text: () => chunks.join(''),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

const FILLER = 'x'.repeat(940); // with the other fields, a body of about 1 KiB

/** `count` messages with stable, unique ids and ~1 KiB bodies. */
export function makeMessages(
  count: number,
  routingKey: string,
  idPrefix = uniqueName('msg'),
): OutboundMessage[] {
  return Array.from({ length: count }, (_, index) => ({
    messageId: `${idPrefix}-${index}`,
    routingKey,
    body: Buffer.from(JSON.stringify({ index, filler: FILLER })),
    type: 'sales-orders',
    correlationId: `${idPrefix}-corr`,
    timestamp: 1_767_225_600_123 + index * 1000,
    headers: { 'business-id': 'b-1', source: 'test' },
  }));
}
