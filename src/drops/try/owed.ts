import type { InputState } from '../state/input-state.js';

/** Most owed states kept in memory; past it the oldest is forgotten (its input then counts the try). */
const MAX_OWED = 1000;

/**
 * A write-behind cache of the state machine's states: states a try produced (through
 * state/machine.ts, like any other) that an outage of the drop store kept from being written.
 * Each is kept by sha256 with the `updatedAt` of the state it follows; the next try of those
 * bytes here applies it if nobody wrote the input's state since, so an outage of the store
 * itself does not use an attempt either. Memory only: a restart forgets it, and the input then
 * counts the try as the written state says.
 */
export class OwedStates {
  readonly #owed = new Map<string, { follows: string | undefined; state: InputState }>();

  /** Remembers `state`, the machine's successor of the written `follows`, until it can be written. */
  owe(follows: InputState, state: InputState): void {
    this.#owed.delete(state.sha256);
    this.#owed.set(state.sha256, { follows: follows.updatedAt, state });
    if (this.#owed.size > MAX_OWED) this.#owed.delete(this.#owed.keys().next().value as string);
  }

  /**
   * The state a try of `sha256` starts from: the owed one if `written` (what the store holds) is
   * still the state it follows, else `written`. Either way the owed one is settled.
   */
  settle(sha256: string, written: InputState | undefined): InputState | undefined {
    const owed = this.#owed.get(sha256);
    if (!owed) return written;
    this.#owed.delete(sha256);
    return written?.updatedAt === owed.follows ? owed.state : written; // nobody wrote it since
  }
}
