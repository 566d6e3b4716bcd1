/**
 * Errors of the service's own parts — its configuration, the drop stores, the broker, the
 * history — for the operator: shown at start-up, by a command, or in a log line, never answered
 * to a client as they are (errors.ts holds those, and maps a history read's failure to one).
 */

/** One problem in a configuration or pipeline file: which file, which field, what is wrong. */
export interface ConfigProblem {
  file: string;
  field: string;
  message: string;
}

/** Configuration is invalid; thrown at start-up (or by `lint`), never over HTTP. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly ConfigProblem[]) {
    super(problems.map((p) => `${p.file}: ${p.field}: ${p.message}`).join('\n'));
  }
}

// Store errors: each store maps its transport's failures once to these (or to DropUnavailable).

/** A name that could leave the drop folder (absolute, `..`, a backslash, a control character). */
export class UnsafeName extends Error {
  override readonly name = 'UnsafeName';
  constructor(file: string) {
    super(
      `Refused file name ${JSON.stringify(file.slice(0, 200))}: it could leave the drop folder`,
    );
  }
}

/**
 * The store refused the worker access to a name (a file it may not read or move, a folder it
 * may not write): not an outage — waiting does not fix it — and not the input's fault. The drop
 * engine treats it like any failure of ours: it uses an attempt, so it ends (dead, or parked when
 * nothing can be recorded) instead of being retried for ever. `cause` is the store's own error.
 */
export class DropAccessDenied extends Error {
  override readonly name = 'DropAccessDenied';
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

/**
 * The drop is set up wrong, and waiting does not fix it: its folder does not exist (or is not a
 * folder), or a folder the worker settles files into is taken by a regular file (every move
 * would fail with ENOTDIR). Reported by `lint`, `run --once`, `/readyz` and `status` instead of
 * every look finding nothing or every settle failing. `code` is short and names no path.
 */
export class DropMisconfigured extends Error {
  override readonly name = 'DropMisconfigured';
  constructor(
    readonly code: 'drop-folder-missing' | 'drop-not-a-folder' | 'settle-folder-is-a-file',
    message: string,
  ) {
    super(message);
  }
}

// Broker errors: the broker module and the publisher's topology map amqplib's failures to these.

/** No node of the broker list took a connection; `failures` holds one `host:port: reason` per node tried. */
export class BrokerUnreachable extends Error {
  override readonly name = 'BrokerUnreachable';
  constructor(
    readonly failures: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(`No broker node took the connection (${failures.join('; ')})`, options);
  }
}

/**
 * A queue exists on the broker with another type than the configuration declares (a classic
 * queue from before quorum became the default): the broker refuses the declaration with
 * PRECONDITION_FAILED. Waiting does not fix it, so start-up stops with the migration steps.
 */
export class QueueTypeMismatch extends Error {
  override readonly name = 'QueueTypeMismatch';
  constructor(
    readonly queue: string,
    readonly declared: string,
    readonly existing: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Queue '${queue}' exists on the broker as a ${existing} queue, but the configuration declares it ${declared} (records queues are quorum queues by default since this release). Either give the queue a new name in broker.queues (the records in the old one stay there for its consumers to drain), or keep the ${existing} queue with \`arguments: { x-queue-type: ${existing} }\` on that queue in the configuration. See docs/operations-instances.md#queue-types.`,
      options,
    );
  }
}

/**
 * `shards: N` needs the broker's `rabbitmq_consistent_hash_exchange` plugin; without it the broker
 * closes the whole connection (`unknown exchange type`) at every declaration. Start-up stops
 * with this instead of reconnecting for ever.
 */
export class ShardPluginMissing extends Error {
  override readonly name = 'ShardPluginMissing';
  constructor(
    readonly queue: string,
    readonly node: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `broker.queues '${queue}' has \`shards\`, which needs the RabbitMQ plugin rabbitmq_consistent_hash_exchange, and the broker${node ? ` (node ${node})` : ''} does not have it enabled: run \`rabbitmq-plugins enable rabbitmq_consistent_hash_exchange\` on every node of the cluster, or remove \`shards\` from the queue.`,
      options,
    );
  }
}

/**
 * The history store could not be reached (PostgreSQL down or cut off, the embedded store not
 * open): each adapter maps its transport's failures to this once. The writer keeps what it could
 * not write and tries again; never an error for a batch or an event. `cause` is the driver's error.
 */
export class HistoryUnavailable extends Error {
  override readonly name = 'HistoryUnavailable';
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
  }
}
