import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One POST as the receiver saw it; `verifiedWith` lists the secrets whose signature checked out. */
export interface ReceivedWebhook {
  readonly id: string;
  readonly timestamp: string;
  readonly signature: string;
  readonly body: Record<string, unknown>;
  readonly verifiedWith: readonly string[];
  /** Every request header as received (`traceparent`, …). */
  readonly headers: IncomingHttpHeaders;
}

/**
 * What the receiver does with a request: answer now with a status (and headers), or hold it
 * (never answer).
 */
export type Behaviour = (
  received: ReceivedWebhook,
  nth: number,
) => number | 'hang' | { status: number; headers: Record<string, string> };

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>/hook` */
  readonly url: string;
  readonly port: number;
  readonly received: ReceivedWebhook[];
  /** Requests held without an answer right now. */
  readonly held: number;
  setBehaviour(behaviour: Behaviour): void;
  /** Answers every held request with `status`. */
  release(status?: number): void;
  close(): Promise<void>;
}

/**
 * A real HTTP endpoint on loopback that checks every signature with the `standardwebhooks`
 * package (code we did not write), once per secret so that a rotation's two signatures are
 * each proven.
 */
export async function startWebhookReceiver(secrets: readonly string[]): Promise<WebhookReceiver> {
  const verifiers = secrets.map((secret) => ({ secret, webhook: new Webhook(secret) }));
  const received: ReceivedWebhook[] = [];
  const held = new Set<ServerResponse>();
  let behaviour: Behaviour = () => 200;

  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const headers = {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    };
    const verifiedWith = verifiers
      .filter(({ webhook }) => {
        try {
          webhook.verify(raw, headers);
          return true;
        } catch {
          return false;
        }
      })
      .map(({ secret }) => secret);
    const webhook: ReceivedWebhook = {
      id: headers['webhook-id'],
      timestamp: headers['webhook-timestamp'],
      signature: headers['webhook-signature'],
      body: JSON.parse(raw) as Record<string, unknown>,
      verifiedWith,
      headers: request.headers,
    };
    received.push(webhook);
    const answer = behaviour(webhook, received.length);
    if (answer === 'hang') {
      held.add(response);
      response.on('close', () => held.delete(response));
      return;
    }
    const { status, headers: extra } =
      typeof answer === 'number' ? { status: answer, headers: {} } : answer;
    response.writeHead(status, { 'content-type': 'text/plain', ...extra }).end(`status ${status}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    get held() {
      return held.size;
    },
    setBehaviour(next) {
      behaviour = next;
    },
    release(status = 200) {
      for (const response of held) response.writeHead(status).end();
      held.clear();
    },
    async close() {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A `whsec_` secret of 32 random-looking bytes derived from `seed` (tests only). */
export function testSecret(seed: number): string {
  return `whsec_${Buffer.alloc(32, seed).toString('base64')}`;
}
