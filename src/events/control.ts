/**
 * Words every worker hears at once: an endpoint disabled (it answered 410 to one worker, or an
 * operator ran `events disable`) or enabled again (`events enable`). A fanout exchange,
 * `<queue>.control`; each worker binds a queue of its own (exclusive, deleted with its
 * connection), so a word reaches every worker consuming now and none later. What must outlive
 * them — the decision itself — is in the history (`endpointStates`), read at start-up.
 *
 * A word names the endpoint as the history does (`Destination.name`: id, full URL, or
 * `file:<pipeline>`) with its business, and carries the time it was decided: a worker applies
 * only a decision newer than the one it holds (state/endpoint.ts), so the order words arrive in
 * does not matter, and a worker hearing its own word changes nothing.
 */
import type { Channel } from 'amqplib';
import type { DisabledBy } from '../vocabulary.js';

export const controlExchangeName = (queue: string) => `${queue}.control`;

export type ControlWord =
  | {
      readonly action: 'disable';
      readonly businessId: string;
      readonly endpoint: string;
      readonly by: DisabledBy;
      /** When it was decided (ISO 8601). */
      readonly at: string;
    }
  | {
      readonly action: 'enable';
      readonly businessId: string;
      readonly endpoint: string;
      readonly at: string;
    };

export async function assertControlExchange(channel: Channel, queue: string): Promise<void> {
  await channel.assertExchange(controlExchangeName(queue), 'fanout', { durable: true });
}

/** This worker's queue on the control exchange: its name, to consume. */
export async function bindControlQueue(channel: Channel, queue: string): Promise<string> {
  await assertControlExchange(channel, queue);
  const { queue: own } = await channel.assertQueue('', {
    exclusive: true,
    autoDelete: true,
    durable: false,
    arguments: { 'x-queue-type': 'classic' },
  });
  await channel.bindQueue(own, controlExchangeName(queue), '');
  return own;
}

export function publishControl(channel: Channel, queue: string, word: ControlWord): boolean {
  return channel.publish(controlExchangeName(queue), '', Buffer.from(JSON.stringify(word)), {
    contentType: 'application/json',
  });
}

/** A word as received; undefined for anything else (a word of a newer version, a stray message). */
export function parseControl(content: Buffer): ControlWord | undefined {
  let word: Partial<Record<string, unknown>>;
  try {
    word = JSON.parse(content.toString('utf8'));
  } catch {
    return undefined;
  }
  const { action, businessId, endpoint, by, at } = word ?? {};
  if (typeof businessId !== 'string' || typeof endpoint !== 'string') return undefined;
  if (typeof at !== 'string' || Number.isNaN(Date.parse(at))) return undefined;
  if (action === 'enable') return { action, businessId, endpoint, at };
  if (action === 'disable' && (by === 'gone' || by === 'operator'))
    return { action, businessId, endpoint, by, at };
  return undefined;
}
