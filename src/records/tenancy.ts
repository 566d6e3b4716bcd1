import { formatPath } from './issues.js';

/**
 * Every v2 object accepts unknown keys, so a record could carry a second business id next to
 * the checked one — at the root, in `identifiers`, on a line. A consumer reading that field
 * would take the record for another business, so the keys that carry a business's identity
 * must hold exactly the authenticated id wherever they appear: `businessId` (the spec's name)
 * and `AccountID` (its v1 name). Only those exact names: an account number of someone else
 * (`customer.accountId`, a marketplace's `sellerAccountId`) is ordinary data passed through,
 * and refusing it refused real orders.
 */
const isIdName = (key: string): boolean => key === 'businessId' || key === 'AccountID';

/**
 * `__proto__` as a key: JSON.parse keeps it as a plain field, but copying the record (zod does)
 * turns it into the object's prototype, so it would be silently dropped, against the promise
 * that unknown fields pass through. It is refused instead, by name.
 */
const RESERVED = '__proto__';

/** Whether any identity key holds another value (the primary one included), or a key is reserved. */
function hasForeignId(value: unknown, businessId: string): boolean {
  if (Array.isArray(value)) {
    for (const item of value)
      if (typeof item === 'object' && item !== null && hasForeignId(item, businessId)) return true;
    return false;
  }
  // for-in: no key array allocated (JSON-parsed objects have no inherited enumerable keys).
  for (const key in value as Record<string, unknown>) {
    const child = (value as Record<string, unknown>)[key];
    if ((child !== businessId && isIdName(key)) || key === RESERVED) return true;
    if (typeof child === 'object' && child !== null && hasForeignId(child, businessId)) return true;
  }
  return false;
}

/** Where a record breaks the key rules: foreign identity keys (other than `primary`, checked on its own) and reserved keys. */
export interface KeyProblems {
  readonly foreign: string[];
  readonly reserved: string[];
}

const NONE: KeyProblems = Object.freeze({ foreign: [], reserved: [] }) as KeyProblems;

/** The paths of identity keys whose value is not `businessId`, and of reserved keys. */
export function keyProblems(
  input: unknown,
  businessId: string,
  primary: readonly string[],
): KeyProblems {
  if (typeof input !== 'object' || input === null || !hasForeignId(input, businessId)) return NONE;
  // Rare: walk again, this time keeping paths.
  const foreign: string[] = [];
  const reserved: string[] = [];
  const path: PropertyKey[] = [];
  const isPrimary = () =>
    path.length === primary.length && path.every((segment, i) => segment === primary[i]);
  const walk = (value: unknown): void => {
    if (typeof value !== 'object' || value === null) return;
    const entries: Array<[PropertyKey, unknown]> = Array.isArray(value)
      ? value.map((v, i) => [i, v])
      : Object.entries(value);
    for (const [key, child] of entries) {
      path.push(key);
      if (key === RESERVED) reserved.push(formatPath(path));
      else if (typeof key === 'string' && child !== businessId && isIdName(key) && !isPrimary())
        foreign.push(formatPath(path));
      walk(child);
      path.pop();
    }
  };
  walk(input);
  return { foreign, reserved };
}
