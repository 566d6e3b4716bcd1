import {
  belowCurrentCost,
  CURRENT_COST,
  DEMO_API_KEY_HASH,
  parseApiKeyHash,
  type ParsedHash,
} from '../api-keys.js';
import { HasherBusy, type PasswordHasher } from './password-hasher.js';
import type { SignInGate, SignInRefusal } from './sign-in-gate.js';

/**
 * The operators' passwords: scrypt, compared in constant time, on the password hasher's own
 * thread (password-hasher.ts), after the sign-in limits (sign-in-gate.ts) let the try through.
 * A name nobody has is checked against a configured hash all the same, so how long a refusal
 * takes does not tell which names exist; and the answer never says which part was wrong.
 */
export interface OperatorCredential {
  readonly name: string;
  /** scrypt, PHC format, as `hash-key` prints it. */
  readonly passwordHash: string;
}

export type OperatorCheckAnswer =
  /** `rehashed`: the password hashed again at the current cost, when its hash is below it. */
  | { readonly ok: true; readonly name: string; readonly rehashed?: string }
  | { readonly ok: false; readonly why: 'wrong' }
  | { readonly ok: false; readonly why: 'none-configured' }
  /** Refused before any hashing; `retryAfterSeconds` is the answer's `Retry-After`. */
  | {
      readonly ok: false;
      readonly why: 'throttled';
      readonly limit: SignInRefusal['limit'];
      readonly retryAfterSeconds: number;
    }
  /** The hasher's queue is full (this instance is hashing as many as it takes). */
  | { readonly ok: false; readonly why: 'busy'; readonly retryAfterSeconds: number };

/** A sign-in's answer; a refusal says no more than why (the page shows nothing else). */
export type OperatorCheck = (
  name: string,
  password: string,
  /** The client's address (sign-in-gate.ts). */
  address: string,
) => Promise<OperatorCheckAnswer>;

export interface OperatorCheckOptions {
  /** The operators configured now: read at every try (a reload may change them). */
  readonly operators: () => readonly OperatorCredential[];
  readonly gate: SignInGate;
  readonly hasher: PasswordHasher;
}

/** Hashes the configuration has already checked (config/scrypt-hash.ts). */
function parsed(hash: string): ParsedHash {
  const result = parseApiKeyHash(hash);
  if (!result) throw new Error('portal.operators: a passwordHash is not a scrypt hash');
  return result;
}

export function createOperatorCheck(options: OperatorCheckOptions): OperatorCheck {
  const { gate, hasher } = options;
  return async (name, password, address) => {
    const operators = options.operators();
    if (operators.length === 0) return { ok: false, why: 'none-configured' };
    const refusal = await gate.admit(name, address);
    if (refusal) return { ok: false, why: 'throttled', ...refusal };
    const stored = operators.find((o) => o.name === name);
    // A configured hash, so an unknown name costs what a known one does; a password is never
    // checked against it to sign anyone in (`stored` decides).
    const against = parsed(stored?.passwordHash ?? operators[0]?.passwordHash ?? DEMO_API_KEY_HASH);
    let matches: boolean;
    try {
      matches = await hasher.verify(password, against);
    } catch (error) {
      if (error instanceof HasherBusy) return { ok: false, why: 'busy', retryAfterSeconds: 1 };
      throw error;
    }
    if (!stored || !matches) {
      await gate.failed(name, address);
      return { ok: false, why: 'wrong' };
    }
    if (!belowCurrentCost(against)) return { ok: true, name };
    // The password is known only now: the one moment a hash at the current cost can be made.
    const rehashed = await hasher.hash(password, CURRENT_COST).catch(() => undefined);
    return { ok: true, name, ...(rehashed && { rehashed }) };
  };
}
