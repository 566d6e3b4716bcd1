import { formatPath } from './issues.js';

/**
 * Where a record says whose it is (spec §5.4): `identifiers.businessId`, or
 * `product.identifiers.businessId` for master data (the kind's `businessIdPath`), checked in
 * validate.ts. Every v2 object accepts unknown keys, so the same record could also carry a second
 * business id where a consumer would take it for the record's own: at the record's root or beside
 * the checked field, on the way to it (`businessId`, the spec's name, or `AccountID`, its v1 name).
 * Those must hold the authenticated id too. Deeper, the name belongs to someone else — a B2B
 * customer's own `customer.businessId`, a line's supplier, a maker under `product.information` —
 * and is ordinary data passed through: refusing it refused real orders (as `customer.accountId`
 * did before).
 */
const ID_NAMES = ['businessId', 'AccountID'] as const;

/**
 * `__proto__` as a key: JSON.parse keeps it as a plain field, but copying the record (zod does)
 * turns it into the object's prototype, so it would be silently dropped, against the promise
 * that unknown fields pass through. It is refused instead, by name, at any depth.
 */
const RESERVED = '__proto__';

function hasReserved(value: unknown): boolean {
  if (Array.isArray(value)) {
    for (const item of value)
      if (typeof item === 'object' && item !== null && hasReserved(item)) return true;
    return false;
  }
  // for-in: no key array allocated (JSON-parsed objects have no inherited enumerable keys).
  for (const key in value as Record<string, unknown>) {
    if (key === RESERVED) return true;
    const child = (value as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null && hasReserved(child)) return true;
  }
  return false;
}

/** Where a record breaks the key rules: foreign identity keys (other than `primary`, checked on its own) and reserved keys. */
export interface KeyProblems {
  readonly foreign: string[];
  readonly reserved: string[];
}

const NONE: KeyProblems = Object.freeze({ foreign: [], reserved: [] }) as KeyProblems;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Identity keys with another value in the objects on the way to `primary` (the root included). */
function foreignOnPath(input: unknown, businessId: string, primary: readonly string[]): string[] {
  const foreign: string[] = [];
  let at = input;
  for (let depth = 0; depth < primary.length && isObject(at); depth++) {
    const here = primary.slice(0, depth);
    for (const name of ID_NAMES) {
      if (!Object.hasOwn(at, name) || at[name] === businessId) continue;
      if (depth === primary.length - 1 && name === primary[depth]) continue; // the checked one
      foreign.push(formatPath([...here, name]));
    }
    at = at[primary[depth]!];
  }
  return foreign;
}

function reservedPaths(input: unknown): string[] {
  const reserved: string[] = [];
  const path: PropertyKey[] = [];
  const walk = (value: unknown): void => {
    if (typeof value !== 'object' || value === null) return;
    const entries: Array<[PropertyKey, unknown]> = Array.isArray(value)
      ? value.map((v, i) => [i, v])
      : Object.entries(value);
    for (const [key, child] of entries) {
      path.push(key);
      if (key === RESERVED) reserved.push(formatPath(path));
      walk(child);
      path.pop();
    }
  };
  walk(input);
  return reserved;
}

/** The paths of identity keys on the record's own path whose value is not `businessId`, and of reserved keys. */
export function keyProblems(
  input: unknown,
  businessId: string,
  primary: readonly string[],
): KeyProblems {
  if (typeof input !== 'object' || input === null) return NONE;
  const foreign = foreignOnPath(input, businessId, primary);
  // Rare: walk again, this time keeping paths.
  const reserved = hasReserved(input) ? reservedPaths(input) : [];
  return foreign.length === 0 && reserved.length === 0 ? NONE : { foreign, reserved };
}
