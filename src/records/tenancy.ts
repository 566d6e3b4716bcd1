import { formatPath } from './issues.js';

/**
 * Every v2 object accepts unknown keys, so a record could carry a second business id next to
 * the checked one — on a line, in `identifiers`, spelt `BusinessID`, `business_id` or `AccountID`
 * (the legacy name). A consumer reading that field would take the record for another business.
 * Any such key anywhere in the record must hold exactly the authenticated id.
 */
const ID_NAMES = new Set(['businessid', 'accountid']);

/** Cheap tests first: this runs for every key of every record ("accountid" is the shortest name). */
function isIdName(key: string): boolean {
  if (key.length < 9 || key.length > 40) return false;
  const first = key.charCodeAt(0) | 0x20;
  if (first >= 0x63 && first <= 0x7a) return false; // a letter other than a or b
  return ID_NAMES.has(key.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

/** Whether any business-id-like key holds another value (the primary one included). */
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

/** Paths of business-id-like keys (other than `primary`, checked on its own) whose value is not `businessId`. */
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
