/**
 * Endpoint state shared by every worker: a decision (disabled after a 410, disabled or enabled
 * by an operator) reaches the workers consuming now as a control word (control.ts) and the
 * workers starting later from the history (`endpointStates`). Both go through `applyDecision`,
 * which keeps only the newest decision (state/endpoint.ts), so they may come in any order.
 */
import { reconnectDelay } from '../backoff.js';
import type { EndpointStateEntry } from '../history/store.js';
import type { DisabledBy } from '../vocabulary.js';
import type { ControlWord } from './control.js';
import { setEndpointState, type HandlerContext } from './handle.js';
import type { HistorySink } from './record.js';
import { disabled, enabled } from './state/endpoint.js';

/** The history as the events worker uses it: rows out, and the endpoint states at start-up. */
export interface EventsHistory {
  readonly writer: HistorySink;
  /** Every business's endpoint states as kept. */
  endpointStates(): Promise<readonly EndpointStateEntry[]>;
}

export interface Decision {
  readonly businessId: string;
  /** As the history names it (`Destination.name`). */
  readonly endpoint: string;
  readonly enabled: boolean;
  readonly by?: DisabledBy;
  /** When it was decided (ms since the epoch). */
  readonly at: number;
}

export const fromWord = (word: ControlWord): Decision => ({
  businessId: word.businessId,
  endpoint: word.endpoint,
  enabled: word.action === 'enable',
  ...(word.action === 'disable' && { by: word.by }),
  at: Date.parse(word.at),
});

export const fromRow = (row: EndpointStateEntry): Decision => ({
  businessId: row.businessId,
  endpoint: row.endpoint,
  enabled: row.enabled,
  by: row.disabledBy ?? 'gone',
  at: row.updatedAt.getTime(),
});

/**
 * Applies a decision to the endpoint it names, when this worker has it; true when its state
 * changed (then the history gets the new row, like any change: idempotent when several workers
 * write the same decision).
 */
export function applyDecision(context: HandlerContext, decision: Decision): boolean {
  const endpoint = context.endpoints
    .get(decision.businessId)
    ?.find((candidate) => candidate.name === decision.endpoint);
  if (!endpoint) return false;
  const before = context.endpointStates.get(endpoint.id);
  const after = decision.enabled
    ? enabled(before, decision.at)
    : disabled(before, decision.by ?? 'gone', decision.at);
  if (after === before) return false;
  setEndpointState(context, endpoint, after);
  if (before.disabled !== after.disabled)
    context.log.info(
      {
        businessId: decision.businessId,
        endpoint: endpoint.host,
        ...(decision.by && !decision.enabled && { by: decision.by }),
      },
      decision.enabled ? 'endpoint enabled' : 'endpoint disabled',
    );
  return true;
}

/** How long consuming waits at start-up for the history's endpoint states before going on without. */
const READ_WAIT_MS = 5_000;

/**
 * Reads the endpoint states kept in the history and applies them. Resolves once applied, or
 * after `READ_WAIT_MS`, or at once when the history cannot be read: delivery never waits on
 * the history for long. An unread history is read again with back-off, in the background,
 * until it answers (a decision heard meanwhile is newer, and stays).
 */
export function loadEndpointStates(
  context: HandlerContext,
  history: EventsHistory,
  stopped: () => boolean,
): Promise<void> {
  let failures = 0;
  const read = async (): Promise<void> => {
    try {
      const rows = await history.endpointStates();
      let disabledCount = 0;
      for (const row of rows) {
        applyDecision(context, fromRow(row));
        if (!row.enabled) disabledCount += 1;
      }
      context.log.info(
        { endpoints: rows.length, disabled: disabledCount },
        'events: endpoint states read from the history',
      );
    } catch (error) {
      if (failures === 0)
        context.log.warn(
          { reason: (error as Error).message },
          'events: the history cannot be read; delivering without its endpoint states (a disabled endpoint is tried) until it can',
        );
      if (stopped()) return;
      const delay = reconnectDelay(failures++, 1_000, 60_000);
      setTimeout(() => void read(), delay).unref();
    }
  };
  const first = read();
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, READ_WAIT_MS);
    timer.unref();
  });
  return Promise.race([first, waited]).finally(() => clearTimeout(timer));
}
