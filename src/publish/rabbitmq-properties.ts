import type { Options } from 'amqplib';
import type { OutboundMessage } from './publisher.js';

/** A record's AMQP properties (delivery-guarantee.md lists them). */
export function recordProperties(message: OutboundMessage): Options.Publish {
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
