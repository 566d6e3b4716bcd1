/**
 * A client that does what the README asks of one: post a batch, and on a 5xx (or a dropped
 * connection) post the very same body again until it is answered 202. Every answer is counted,
 * so a fault test can print and check what the service said.
 */
export interface PostStats {
  batches: number;
  accepted: number;
  /** Answers 503 (broker away, confirms lost or late). */
  unavailable: number;
  /** Other 5xx answers (must stay 0: a fault is never an internal error). */
  otherServerErrors: number;
  /** Requests that got no answer at all. */
  networkErrors: number;
  /** Extra posts of a batch after a failed one. */
  retries: number;
  /** Batches that needed at least one retry. */
  retriedBatches: number;
  /** When each 202 arrived (performance.now()), to check none came while the broker could not confirm. */
  acceptedAt: number[];
  /** When each 503 arrived. */
  unavailableAt: number[];
}

export interface Accepted {
  readonly messageIds: string[];
  readonly attempts: number;
}

export function newStats(): PostStats {
  return {
    batches: 0,
    accepted: 0,
    unavailable: 0,
    otherServerErrors: 0,
    networkErrors: 0,
    retries: 0,
    retriedBatches: 0,
    acceptedAt: [],
    unavailableAt: [],
  };
}

export interface RetryingClient {
  readonly stats: PostStats;
  /** Posts until 202 and returns its message ids; throws on a 4xx or when `deadline` (performance.now()) passes. */
  post(path: string, body: string, deadline: number): Promise<Accepted>;
}

export function retryingClient(
  baseUrl: string,
  authorization: string,
  backoffMs = 100,
): RetryingClient {
  const stats = newStats();
  return {
    stats,
    async post(path, body, deadline) {
      stats.batches += 1;
      for (let attempt = 1; ; attempt++) {
        if (attempt === 2) stats.retriedBatches += 1;
        if (attempt > 1) stats.retries += 1;
        const answer = await fetch(`${baseUrl}${path}`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body,
          // Longer than the service's publish timeout: the service must answer first.
          signal: AbortSignal.timeout(30_000),
        }).then(
          async (response) => ({ status: response.status, text: await response.text() }),
          (error: unknown) => ({ status: 0, text: String(error) }),
        );
        if (answer.status === 202) {
          stats.accepted += 1;
          stats.acceptedAt.push(performance.now());
          const parsed = JSON.parse(answer.text) as { messageIds: string[] };
          return { messageIds: parsed.messageIds, attempts: attempt };
        }
        if (answer.status === 503) {
          stats.unavailable += 1;
          stats.unavailableAt.push(performance.now());
        } else if (answer.status === 0) {
          stats.networkErrors += 1;
        } else if (answer.status >= 500) {
          stats.otherServerErrors += 1;
        } else {
          throw new Error(
            `unexpected ${answer.status} for a valid batch: ${answer.text.slice(0, 500)}`,
          );
        }
        if (performance.now() > deadline)
          throw new Error(
            `batch still not accepted after ${attempt} attempts; last answer ${answer.status}: ${answer.text.slice(0, 300)}`,
          );
        // Bounded pacing between retries (the real client's back-off), not a wait for an event.
        await new Promise((resolve) => setTimeout(resolve, backoffMs));
      }
    },
  };
}
