/**
 * Where accepted records go. Every implementation keeps one promise: `publish` resolves
 * only when the destination has durably taken *every* message of the call — for RabbitMQ,
 * each one confirmed by the broker and none returned as unroutable. Any doubt rejects
 * with `PublishFailed` (HTTP 503), so "accepted" is never said for a batch that is not
 * safe.
 */
export interface OutboundMessage {
  /** Stable id: the same record in a retried batch gets the same id (consumers de-duplicate). */
  readonly messageId: string;
  readonly routingKey: string;
  /** The canonical v2 record as UTF-8 JSON. */
  readonly body: Buffer;
  /** The record kind, e.g. `sales-orders`. */
  readonly type: string;
  readonly correlationId: string;
  /** Milliseconds since the epoch (sent to AMQP as seconds). */
  readonly timestamp: number;
  /** Always holds `business-id` and `source`; more per source. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface ReadinessCheck {
  readonly ready: boolean;
  /** One line per failing check, safe to show an operator (no secrets). */
  readonly problems: readonly string[];
}

export interface Publisher {
  /** `rabbitmq`, `embedded` (NDJSON files) or `none` (sandbox: publishes nothing). */
  readonly name: 'rabbitmq' | 'embedded' | 'none';
  /** A description for the start-up log line, e.g. the broker host or the data folder. Never a password. */
  readonly target: string;
  /** Connect and assert topology. RabbitMQ: keeps reconnecting in the background if the first try fails. */
  start(): Promise<void>;
  /** Resolves once every message is durably taken; rejects with `PublishFailed` otherwise. */
  publish(messages: readonly OutboundMessage[]): Promise<void>;
  readiness(): Promise<ReadinessCheck>;
  /** Waits for in-flight publishes to settle, then releases connections and files. */
  close(): Promise<void>;
}
