import { answer } from './http-app.js';

/** One keyed request as its client saw it. */
export interface KeyedAnswer {
  readonly key: string;
  /** When the answer came. */
  readonly at: number;
  readonly status: number;
  readonly retryAfter: string | null;
  readonly replayed: boolean;
  readonly type?: string;
  readonly messageIds?: string[];
}

export interface KeyedLoad {
  /** Every answer so far, in the order they came. */
  readonly sent: readonly KeyedAnswer[];
  /** Answers `202` to a key's first run (not a replay) that came after `since`. */
  freshAccepted(since?: number): number;
  /** Stops the clients after their current request. */
  stop(): Promise<void>;
}

/**
 * Clients that each send keys one after the other, every key `sendsPerKey` times in a row (its
 * first request, then repeats of it), each with a batch of its own (`batchFor`), so that a
 * second publish of a key would show as a repeated message id. A refused request is sent again
 * 50 ms later (a client honouring `Retry-After` would wait longer: this finds the end of an
 * outage sooner).
 */
export function startKeyedLoad(options: {
  post: (body: unknown, key: string) => Promise<Response>;
  batchFor: (key: string) => unknown;
  prefix: string;
  clients: number;
  sendsPerKey: number;
}): KeyedLoad {
  const sent: KeyedAnswer[] = [];
  let stopping = false;
  const client = async (c: number) => {
    for (let n = 0; !stopping; n++) {
      const key = `${options.prefix}-${c}-${n}`;
      const body = options.batchFor(key);
      for (let i = 0; i < options.sendsPerKey && !stopping; i++) {
        const response = await options.post(body, key);
        const parsed = await answer(response);
        sent.push({
          key,
          at: Date.now(),
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          replayed: response.headers.get('idempotent-replayed') === 'true',
          ...(parsed.type !== undefined && { type: parsed.type }),
          ...(response.status === 202 && { messageIds: parsed.messageIds }),
        });
        if (response.status !== 202) await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
  const clients = Array.from({ length: options.clients }, (_, c) => client(c));
  return {
    sent,
    freshAccepted: (since = 0) =>
      sent.filter((s) => s.status === 202 && !s.replayed && s.at > since).length,
    async stop() {
      stopping = true;
      await Promise.allSettled(clients);
    },
  };
}

/** What a run of keyed load came to, against the message ids found in the queue. */
export function keyedLoadFigures(sent: readonly KeyedAnswer[], queued: readonly string[]) {
  const runs = new Map<string, number>();
  for (const s of sent)
    if (s.status === 202 && !s.replayed) runs.set(s.key, (runs.get(s.key) ?? 0) + 1);
  const answered = new Set(sent.flatMap((s) => s.messageIds ?? []));
  const inQueue = new Set(queued);
  const times = sent.filter((s) => s.status === 202).map((s) => s.at);
  let gap = 0;
  for (let i = 1; i < times.length; i++) gap = Math.max(gap, times[i]! - times[i - 1]!);
  return {
    /** Answers neither the Idempotency-Key promise's (202, replay, 409) nor a 503 to retry. */
    unexpected: sent.filter(
      (s) =>
        !(
          s.status === 202 ||
          (s.status === 409 && s.retryAfter !== null) ||
          (s.status === 503 &&
            s.retryAfter !== null &&
            s.type === '/problems/idempotency-unavailable')
        ),
    ),
    /** Keys that ran (were answered 202 without a replay) more than once. */
    ranTwice: [...runs].filter(([, count]) => count > 1).map(([key]) => key),
    keys: runs.size,
    /** Message ids found in the queue more than once. */
    duplicates: queued.length - inQueue.size,
    /** Message ids answered in a 202 but not in the queue. */
    missing: [...answered].filter((id) => !inQueue.has(id)),
    requests: sent.length,
    accepted: times.length,
    refused: sent.filter((s) => s.status === 503).length,
    inUse: sent.filter((s) => s.status === 409).length,
    /** The longest stretch without a `202`, in ms: an outage as clients saw it. */
    gap,
  };
}
