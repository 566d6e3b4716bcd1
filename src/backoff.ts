/**
 * Back-off for reconnecting and retrying (broker, drop stores, leases): one formula everywhere,
 * so every loop that waits for a part to come back spreads its tries the same way.
 */
/** Exponential back-off with "equal jitter": at least half the step, never above the cap. */
export function reconnectDelay(
  attempt: number,
  initialDelayMs: number,
  maxDelayMs: number,
): number {
  const step = Math.min(maxDelayMs, initialDelayMs * 2 ** attempt);
  return Math.round(step / 2 + (Math.random() * step) / 2);
}
