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

/** Whether any identity key holds another value (the primary one included). */
function hasForeignId(value: unknown, businessId: string): boolean {
  if (Array.isArray(value)) {
    for (const item of value)
      if (typeof item === 'object' && item !== null && hasForeignId(item, businessId)) return true;
    return false;
  }
  // for-in: no key array allocated (JSON-parsed objects have no inherited enumerable keys).
  for (const key in value as Record<string, unknown>) {
    const child = (value as Record<string, unknown>)[key];
    if (child !== businessId && isIdName(key)) return true;
    if (typeof child === 'object' && child !== null && hasForeignId(child, businessId)) return true;
  }
  return false;
}

/** Paths of identity keys (other than `primary`, checked on its own) whose value is not `businessId`. */
export function foreignIdPaths(
  input: unknown,
  businessId: string,
  primary: readonly string[],
): string[] {
  if (typeof input !== 'object' || input === null || !hasForeignId(input, businessId)) return [];
  // Rare: walk again, this time keeping paths.
  const found: string[] = [];
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
      if (typeof key === 'string' && child !== businessId && isIdName(key) && !isPrimary())
        found.push(formatPath(path));
      walk(child);
      path.pop();
    }
  };
  walk(input);
  return found;
}
