import type { Options } from 'amqplib';
import type { OutboundMessage } from './publisher.js';

/**
 * What a record's message carries besides what every one needs (`broker.messageFormat`):
 * `full` adds the batch's correlation id, the kind, the publish time and the source and trace
 * headers; `lean` leaves them out, for a broker that is the bottleneck (each field is a cost per
 * message: docs/delivery-guarantee.md prices them).
 */
export type MessageFormat = 'full' | 'lean';

/** A record's AMQP properties in the given format (delivery-guarantee.md lists them). */
export function recordProperties(
  format: MessageFormat,
): (message: OutboundMessage) => Options.Publish {
  return format === 'lean' ? leanProperties : fullProperties;
}

/** What consumers cannot do without: the id they de-duplicate by, and durability. */
function leanProperties(message: OutboundMessage): Options.Publish {
  return {
    persistent: true,
    mandatory: true,
    messageId: message.messageId,
    contentType: 'application/json',
  };
}

function fullProperties(message: OutboundMessage): Options.Publish {
  return {
    persistent: true,
    mandatory: true,
    messageId: message.messageId,
    correlationId: message.correlationId,
    type: message.type,
    contentType: 'application/json',
    timestamp: Math.floor(message.timestamp / 1000),
    headers: message.headers,
  };
}
