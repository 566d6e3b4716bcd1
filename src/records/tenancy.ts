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

/**
 * Text no store downstream can keep as it is (item 1 of issue 38): NUL, which PostgreSQL refuses in
 * `text` and `jsonb` (22021, 22P05), and a UTF-16 surrogate without its pair, which has no UTF-8
 * form (encoders silently turn it into U+FFFD, JSON keeps an escape `jsonb` refuses). In unicode
 * mode a pair is one code point, so `\p{Cs}` matches only a lone half.
 */
const UNSAFE_TEXT = /[\0\p{Cs}]/u;

export const isUnsafeText = (text: string): boolean => UNSAFE_TEXT.test(text);

/**
 * Whether anything in the record needs a path: a reserved key, or unsafe text in a key or a
 * string value, at any depth. One walk over every record (the slow walk that names the paths runs
 * only when this says so), so every text field of every kind — unlisted ones too — is checked
 * once, without a rule per field.
 */
function suspect(value: unknown): boolean {
  if (Array.isArray(value)) {
    for (const item of value) {
      if (
        typeof item === 'string'
          ? isUnsafeText(item)
          : typeof item === 'object' && item !== null && suspect(item)
      )
        return true;
    }
    return false;
  }
  // for-in: no key array allocated (JSON-parsed objects have no inherited enumerable keys).
  for (const key in value as Record<string, unknown>) {
    if (key === RESERVED || isUnsafeText(key)) return true;
    const child = (value as Record<string, unknown>)[key];
    if (
      typeof child === 'string'
        ? isUnsafeText(child)
        : typeof child === 'object' && child !== null && suspect(child)
    )
      return true;
  }
  return false;
}

/**
 * Where a record breaks the key rules — foreign identity keys (other than `primary`, checked on
 * its own), reserved keys — and where it holds text no store can keep (a key or a value).
 */
export interface KeyProblems {
  readonly foreign: string[];
  readonly reserved: string[];
  readonly unsafeText: string[];
}

const NONE: KeyProblems = Object.freeze({
  foreign: [],
  reserved: [],
  unsafeText: [],
}) as KeyProblems;

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

/** The rare second walk: the paths of reserved keys and of unsafe text (a key's path names the key). */
function suspectPaths(input: unknown): { reserved: string[]; unsafeText: string[] } {
  const reserved: string[] = [];
  const unsafeText: string[] = [];
  const path: PropertyKey[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') {
      if (isUnsafeText(value)) unsafeText.push(formatPath(path));
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const entries: Array<[PropertyKey, unknown]> = Array.isArray(value)
      ? value.map((v, i) => [i, v])
      : Object.entries(value);
    for (const [key, child] of entries) {
      path.push(key);
      if (key === RESERVED) reserved.push(formatPath(path));
      else if (typeof key === 'string' && isUnsafeText(key)) unsafeText.push(formatPath(path));
      walk(child);
      path.pop();
    }
  };
  walk(input);
  return { reserved, unsafeText };
}

/** The paths of identity keys on the record's own path whose value is not `businessId`, of reserved keys, and of unsafe text. */
export function keyProblems(
  input: unknown,
  businessId: string,
  primary: readonly string[],
): KeyProblems {
  if (typeof input !== 'object' || input === null) return NONE;
  const foreign = foreignOnPath(input, businessId, primary);
  // Rare: walk again, this time keeping paths.
  if (!suspect(input)) return foreign.length === 0 ? NONE : { ...NONE, foreign };
  return { foreign, ...suspectPaths(input) };
}
