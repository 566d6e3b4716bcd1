/**
 * Field types shared by the five kinds, so a rule (what an id is, what a timestamp is) is
 * written once. Schema instances are immutable in zod, so sharing them between fields is safe.
 */
import { z } from 'zod';

/** A string the spec gives no further rule for; the empty string is accepted. */
export const text = z.string();

/**
 * A string that must not be empty: business ids and each record's own id. They route
 * messages and tie receipts to records (lineage), so an empty one would be silently useless.
 */
export const id = z.string().min(1);

/** zod 4 numbers reject NaN and ±Infinity already: every number here is finite. */
export const num = z.number();

/** A quantity: finite and never negative. */
export const quantity = z.number().min(0);

const withSeconds = z.iso.datetime();
const minutesOnly = z.iso.datetime({ precision: -1 });

/**
 * ISO 8601 date-time with the UTC designator and no offset (spec §2 conventions): with or
 * without seconds and fractions (`2026-02-03T10:00Z` is as valid as `…T10:00:00.5Z`), and with
 * the lower-case `t`/`z` RFC 3339 allows. Published as received, never rewritten. zod's date
 * pattern knows month lengths and leap years, so 2026-02-30 is rejected here too.
 */
export const timestamp = z.stringFormat('datetime', (value) => {
  const upper = /[tz]/.test(value) ? value.toUpperCase() : value;
  return withSeconds.safeParse(upper).success || minutesOnly.safeParse(upper).success;
});

/**
 * Objects are loose: fields the spec does not list pass through unchanged. The spec marks its
 * field lists as incomplete ("not shown"), so dropping or rejecting unknown fields would lose data.
 */
export const obj = z.looseObject;

/** An array the spec marks mandatory: present and with at least one item. */
export function nonEmptyArray<T extends z.ZodType>(item: T) {
  return z.array(item).min(1);
}

/** `{ name, value }` value-added service instruction (sales order header and lines). */
export const nameValue = obj({ name: text, value: text });
