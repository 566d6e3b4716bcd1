import { constants } from 'node:fs';
import { access, mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import { PublishFailed } from '../errors.js';
import type { Logger } from '../log.js';
import type { OutboundMessage, Publisher } from './publisher.js';

export interface EmbeddedOptions {
  /**
   * Folder for `messages-YYYY-MM-DD.ndjson` (UTC date of the write). Created when missing, so a
   * fresh checkout works without set-up. Required (the service passes `<dataDirectory>/outbox`).
   */
  directory: string;
}

export interface EmbeddedPublisher extends Publisher {
  /** How many write+fdatasync groups have run: fewer than `publish` calls under concurrency. */
  readonly flushCount: number;
}

interface Waiting {
  readonly text: string;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** One line per message: what a consumer of the real broker would see, with the body parsed. */
function toLine(message: OutboundMessage): string {
  return `${JSON.stringify({
    messageId: message.messageId,
    routingKey: message.routingKey,
    type: message.type,
    correlationId: message.correlationId,
    timestamp: new Date(message.timestamp).toISOString(),
    headers: message.headers,
    record: JSON.parse(message.body.toString('utf8')) as unknown,
  })}\n`;
}

/**
 * The no-broker publisher for development: appends to NDJSON files and resolves only after
 * fdatasync, so "accepted" means on disk, as it means "confirmed" with RabbitMQ.
 *
 * Group commit: calls that arrive while a flush runs wait for the next one and share a
 * single write + fdatasync, so a busy service does not pay one disk sync per request.
 */
export function createEmbeddedPublisher(options: EmbeddedOptions, log: Logger): EmbeddedPublisher {
  const directory = path.resolve(options.directory);
  let waiting: Waiting[] = [];
  let flushing: Promise<void> | undefined;
  let flushCount = 0;
  let closed = false;
  /** Files whose directory entry is known to be durable (created earlier, or synced by us). */
  const syncedFiles = new Set<string>();

  async function writeGroup(text: string): Promise<void> {
    const file = path.join(directory, `messages-${new Date().toISOString().slice(0, 10)}.ndjson`);
    await mkdir(directory, { recursive: true });
    const handle = await open(file, 'a');
    try {
      await handle.writeFile(text, 'utf8');
      await handle.datasync();
    } finally {
      await handle.close();
    }
    if (!syncedFiles.has(file)) {
      // A new file's name lives in the directory: sync it too, or a crash could lose the file.
      const dir = await open(directory, 'r');
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
      syncedFiles.add(file);
    }
  }

  async function flushLoop(): Promise<void> {
    await Promise.resolve(); // let calls made in the same tick join the first group
    while (waiting.length > 0) {
      const group = waiting;
      waiting = [];
      flushCount += 1;
      try {
        await writeGroup(group.map((entry) => entry.text).join(''));
        for (const entry of group) entry.resolve();
      } catch (error) {
        log.error(
          { directory, reason: error instanceof Error ? error.message : String(error) },
          'could not write the embedded outbox',
        );
        const failure = new PublishFailed(
          'The records could not be stored; the batch was not accepted.',
          error,
        );
        for (const entry of group) entry.reject(failure);
      }
    }
    flushing = undefined;
  }

  return {
    name: 'embedded',
    target: directory,
    get flushCount() {
      return flushCount;
    },
    async start() {
      try {
        await mkdir(directory, { recursive: true });
      } catch (error) {
        // Not fatal: readiness reports it and every publish answers 503 until it is fixed.
        log.error(
          { directory, reason: error instanceof Error ? error.message : String(error) },
          'could not create the embedded outbox folder',
        );
      }
    },
    async publish(messages) {
      if (closed)
        throw new PublishFailed('The service is shutting down; the batch was not accepted.');
      if (messages.length === 0) return;
      const text = messages.map(toLine).join('');
      const stored = new Promise<void>((resolve, reject) =>
        waiting.push({ text, resolve, reject }),
      );
      flushing ??= flushLoop();
      return stored;
    },
    async readiness() {
      try {
        await access(directory, constants.W_OK);
        return { ready: true, problems: [] };
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? 'error';
        return { ready: false, problems: [`outbox folder ${directory} is not writable (${code})`] };
      }
    },
    async close() {
      closed = true;
      await flushing;
    },
  };
}
