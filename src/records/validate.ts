/**
 * Validation of one record against its kind, plus tenancy (spec §5.4). On the hot path
 * (hundreds of thousands of records/s): one parse, no try/catch, no JSON round-trips, and the
 * error strings are only built for failing records.
 */
import type { RecordKind } from './kind.js';
import { PARSE_OPTIONS, UNSAFE_TEXT_MESSAGE, formatIssues, formatPath } from './issues.js';
import { keyProblems } from './tenancy.js';

export type ValidationResult =
  | { ok: true; record: Record<string, unknown> }
  | { ok: false; errors: string[] };

/** Deliberately silent about both values: the caller knows its own id, and echoing another is a leak. */
const TENANCY_MESSAGE = 'Must equal the authenticated business id';
/** A key that could not pass through unchanged (see tenancy.ts). */
const RESERVED_MESSAGE = 'Not allowed: "__proto__" is a reserved name; rename the field';

/** Reads `path` from an unknown value without allocating; undefined if any step is not an object. */
function valueAt(input: unknown, path: readonly string[]): unknown {
  let current = input;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** Removes `path` from a parsed record (zod built it fresh, so the caller's input is untouched). */
function removeAt(record: Record<string, unknown>, path: readonly string[]): void {
  let parent: unknown = record;
  const last = path.length - 1;
  for (let i = 0; i < last; i++) {
    if (typeof parent !== 'object' || parent === null) return;
    parent = (parent as Record<string, unknown>)[path[i]!];
  }
  if (typeof parent === 'object' && parent !== null && last >= 0) {
    delete (parent as Record<string, unknown>)[path[last]!];
  }
}

/**
 * Tenancy applies only to a non-empty string id: a missing, mistyped or empty one already
 * fails the schema, and a second message for the same field would only add noise.
 */
function isForeign(kind: RecordKind, input: unknown, businessId: string): boolean {
  const value = valueAt(input, kind.businessIdPath);
  return typeof value === 'string' && value !== '' && value !== businessId;
}

/**
 * Validates one record for the authenticated `businessId`. Every failing field is listed;
 * a tenancy error comes first, then the schema errors in schema order.
 */
export function validateRecord(
  kind: RecordKind,
  input: unknown,
  businessId: string,
): ValidationResult {
  const result = kind.schema.safeParse(input, PARSE_OPTIONS);
  const foreign = isForeign(kind, input, businessId);
  const keys = keyProblems(input, businessId, kind.businessIdPath);
  const others = [
    ...keys.foreign.map((path) => `${path}: ${TENANCY_MESSAGE}`),
    ...keys.reserved.map((path) => `${path}: ${RESERVED_MESSAGE}`),
    ...keys.unsafeText.map((path) => `${path}: ${UNSAFE_TEXT_MESSAGE}`),
  ];

  if (result.success) {
    if (foreign || others.length > 0) {
      return {
        ok: false,
        errors: [
          ...(foreign ? [`${formatPath(kind.businessIdPath)}: ${TENANCY_MESSAGE}`] : []),
          ...others,
        ],
      };
    }
    // Every kind's schema is an object schema, so a successful parse is a plain object.
    const record = result.data as Record<string, unknown>;
    for (const path of kind.platformFields) removeAt(record, path);
    return { ok: true, record };
  }

  const errors = formatIssues(result.error.issues);
  errors.unshift(...others);
  if (foreign) errors.unshift(`${formatPath(kind.businessIdPath)}: ${TENANCY_MESSAGE}`);
  return { ok: false, errors };
}
