/**
 * Text as the history keeps it. What reaches a row from outside the records (a warehouse event's
 * payload, a partner endpoint's answer, a problem that names a field by its key, a file name) may
 * hold a NUL character, which PostgreSQL refuses in `text` and `jsonb`, or a UTF-16 surrogate
 * without its pair, which has no UTF-8 form (and whose JSON escape `jsonb` refuses). Records are
 * refused at validation instead (records/tenancy.ts); here each such character becomes U+FFFD in
 * the history's copy, on both stores alike, so the row is kept and the rest of it reads as sent.
 */
const UNSAFE = /[\0\p{Cs}]/u;
const UNSAFE_ALL = /[\0\p{Cs}]/gu;
/** In JSON text: NUL and a lone surrogate are written as escapes (a pair is written as is). */
const UNSAFE_ESCAPE = /\\u(?:0000|d[89a-f])/i;

/** `text` with NUL and lone surrogates replaced; the same string when it has none. */
export function storableText(text: string): string {
  return UNSAFE.test(text) ? text.replace(UNSAFE_ALL, '\uFFFD') : text;
}

/** `text` or nothing, as storableText keeps it. */
export const storableOptional = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : storableText(text);

/** JSON text of `value` (`null` for undefined) that both stores keep, keys and values alike. */
export function storableJson(value: unknown): string | null {
  if (value === undefined) return null;
  const json = JSON.stringify(value);
  // A false positive (the text `\ud800` itself, escaped) only costs the walk below.
  return UNSAFE_ESCAPE.test(json) ? JSON.stringify(clean(value)) : json;
}

function clean(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(clean);
  if (typeof value === 'object' && value !== null && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) out[storableText(key)] = clean(child);
    return out;
  }
  return value;
}
