/**
 * The one error map for record validation and the `<field path>: <message>` formatting of
 * spec §2.2. Every kind is parsed with `schema.safeParse(input, { error: issueMessage })`:
 * the map is passed per parse, never installed on zod's global config, so other zod users in
 * the process (config loading, tests) keep their own wording.
 *
 * zod 4 issues carry no `received` and word a missing key as "Invalid input: expected string,
 * received undefined"; the spec wants `Required` and `Expected <type>, received <type>`.
 */
import type { z } from 'zod';

type RawIssue = z.core.$ZodRawIssue;

/** Example shown in the timestamp message, so a caller sees the exact form we accept. */
export const DATETIME_EXAMPLE = '2026-01-31T09:30:00Z';

/** The received type in the words of the spec: string, number, boolean, object, array, null, nan... */
export function receivedType(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'array';
  if (typeof input === 'number') {
    if (Number.isNaN(input)) return 'nan';
    if (!Number.isFinite(input)) return 'infinity';
  }
  return typeof input;
}

const plural = (n: number | bigint, one: string, many: string): string =>
  `${n} ${n === 1 ? one : many}`;

/** "character" / "item" by the issue's origin; numbers are worded as comparisons. */
function sizeBound(origin: string, bound: number | bigint): string {
  if (origin === 'string') return plural(bound, 'character', 'characters');
  if (origin === 'array' || origin === 'set') return plural(bound, 'item', 'items');
  return String(bound);
}

function tooSmall(iss: Extract<RawIssue, { code: 'too_small' }>): string {
  const { origin, minimum } = iss;
  if (origin === 'number' || origin === 'int' || origin === 'bigint') {
    return `Expected a number ${iss.inclusive ? '>=' : '>'} ${minimum}`;
  }
  if (iss.exact) return `Expected exactly ${sizeBound(origin, minimum)}`;
  return `Expected at least ${sizeBound(origin, minimum)}`;
}

function tooBig(iss: Extract<RawIssue, { code: 'too_big' }>): string {
  const { origin, maximum } = iss;
  if (origin === 'number' || origin === 'int' || origin === 'bigint') {
    return `Expected a number ${iss.inclusive ? '<=' : '<'} ${maximum}`;
  }
  if (iss.exact) return `Expected exactly ${sizeBound(origin, maximum)}`;
  return `Expected at most ${sizeBound(origin, maximum)}`;
}

function oneOf(values: readonly unknown[]): string {
  return `Expected one of: ${values.map(String).join(', ')}`;
}

/**
 * The error map. Returns the message for every issue zod raises on a record; refinements
 * that set their own message keep it (zod prefers an issue's own message over any map).
 */
export function issueMessage(iss: RawIssue): string {
  switch (iss.code) {
    case 'invalid_type':
      // zod reports an absent key as invalid_type with input undefined.
      if (iss.input === undefined) return 'Required';
      return `Expected ${iss.expected}, received ${receivedType(iss.input)}`;
    case 'too_small':
      return tooSmall(iss);
    case 'too_big':
      return tooBig(iss);
    case 'invalid_format':
      if (iss.format === 'datetime') {
        return `Expected an ISO 8601 date-time with UTC designator (e.g. ${DATETIME_EXAMPLE})`;
      }
      return `Expected ${iss.format} format`;
    case 'invalid_value':
      // An enum reports an absent key as invalid_value; absence still reads `Required`.
      return iss.input === undefined ? 'Required' : oneOf(iss.values);
    case 'invalid_union':
      // A discriminated union reports at the discriminator's path but with the whole object as input.
      if (iss.discriminator !== undefined && 'options' in iss && Array.isArray(iss.options)) {
        const input = iss.input as Record<string, unknown> | undefined;
        return input?.[iss.discriminator] === undefined ? 'Required' : oneOf(iss.options);
      }
      return 'Invalid value';
    case 'unrecognized_keys':
      return `Unrecognized field(s): ${iss.keys.join(', ')}`;
    case 'not_multiple_of':
      return `Expected a multiple of ${iss.divisor}`;
    default:
      return 'Invalid value';
  }
}

/**
 * Text in any field (a key or a value, listed by the spec or not) that no store downstream can
 * keep: checked once for every kind by the record walk of tenancy.ts, not by a rule per field.
 */
export const UNSAFE_TEXT_MESSAGE =
  'Must not contain a NUL character (\\u0000) or an unpaired UTF-16 surrogate';

/** The parse option every record parse uses; one frozen object, so no allocation per parse. */
export const PARSE_OPTIONS = Object.freeze({ error: issueMessage });

/** Field path relative to the record: `a.b[0].c`; the record itself is `(record)`. */
export function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(record)';
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

/** `<field path>: <message>` per issue, in the order zod raised them (schema key order). */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  const out = new Array<string>(issues.length);
  for (let i = 0; i < issues.length; i++) {
    const issue = issues[i]!;
    out[i] = `${formatPath(issue.path)}: ${issue.message}`;
  }
  return out;
}
