import type { KindName } from '../records/kind.js';
import type { RecordCheck } from './validate-batch.js';

/**
 * Routing keys from a template such as `{kind}.{businessId}` or
 * `{kind}.{businessId}.{identifiers.site}`. Each placeholder fills one topic word: dots,
 * `*`, `#` and white space inside a value become `_` so a value can never add words or
 * wildcards; a missing value becomes `_`.
 */
export interface RoutingKeyFor {
  (kind: KindName, businessId: string, record: Record<string, unknown>): string;
  /** Why a record whose key this is cannot be routed (`routingProblem`); none: it always can. */
  readonly problem?: (routingKey: string, record: Record<string, unknown>) => string | undefined;
  /** The template it was compiled from, so another thread can compile the same (`compileRoutingKey`). */
  readonly template?: string;
}

type Part = string | { field: readonly string[] } | 'kind' | 'businessId';

const PLACEHOLDER = /\{([^{}]+)\}/g;

export function compileRoutingKey(template: string): RoutingKeyFor {
  const parts: Part[] = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    if (match.index > last) parts.push(template.slice(last, match.index));
    const name = match[1]!;
    parts.push(name === 'kind' || name === 'businessId' ? name : { field: name.split('.') });
    last = match.index + match[0].length;
  }
  if (last < template.length) parts.push(template.slice(last));

  const routingKeyFor = (
    kind: KindName,
    businessId: string,
    record: Record<string, unknown>,
  ): string => {
    let key = '';
    for (const part of parts) {
      if (part === 'kind') key += kind;
      else if (part === 'businessId') key += topicWord(businessId);
      else if (typeof part === 'string') key += part;
      else key += topicWord(fieldValue(record, part.field));
    }
    return key;
  };
  // Only a record field can make a key too long (the kind and configured business ids are short):
  // a template without one, the default among them, costs no check per record.
  if (!parts.some((part) => typeof part === 'object'))
    return Object.assign(routingKeyFor, { template });
  return Object.assign(routingKeyFor, {
    template,
    problem: (routingKey: string, record: Record<string, unknown>) =>
      routingProblem(template, routingKey, record),
  });
}

/** AMQP carries a routing key as a short string: at most 255 bytes of UTF-8. */
export const MAX_ROUTING_KEY_BYTES = 255;

/**
 * Why a record cannot be routed, in the words of a validation error, or undefined: its routing key
 * would be longer than AMQP allows (a record field in the template holding a long value). Found
 * while validating, so the batch is refused as the input's fault (400, a failure receipt) instead
 * of failing at the broker as if it were down (503, retried for ever).
 */
export function routingProblem(
  template: string,
  routingKey: string,
  record: Record<string, unknown>,
): string | undefined {
  // A key of at most 85 UTF-16 units is at most 255 bytes: most keys are decided without encoding.
  if (routingKey.length <= MAX_ROUTING_KEY_BYTES / 3) return undefined;
  const bytes = Buffer.byteLength(routingKey);
  if (bytes <= MAX_ROUTING_KEY_BYTES) return undefined;
  // The record field that adds most to the key is the one to name.
  let longest = '';
  let longestLength = -1;
  for (const field of templateFields(template)) {
    const value = fieldValue(record, field.split('.'));
    const length =
      typeof value === 'string' || typeof value === 'number' ? String(value).length : 0;
    if (length > longestLength) [longest, longestLength] = [field, length];
  }
  const what = `the routing key this record gets (broker.routingKey "${template}") is ${bytes} bytes; AMQP allows at most ${MAX_ROUTING_KEY_BYTES}`;
  return longest === '' ? `Cannot be routed: ${what}` : `${longest}: Too long to route: ${what}`;
}

/**
 * The check `validateBatch` runs on each valid record of `kind` for `businessId`: its routing key's
 * problem as the record's error list, or undefined (none can arise from this template).
 */
export function routableCheck(
  routingKeyFor: RoutingKeyFor,
  kind: KindName,
  businessId: string,
): RecordCheck | undefined {
  const { problem } = routingKeyFor;
  if (!problem) return undefined;
  return (record) => {
    const why = problem(routingKeyFor(kind, businessId, record), record);
    return why === undefined ? undefined : [why];
  };
}

/** Placeholders naming record fields, e.g. `identifiers.site`. */
export function templateFields(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)]
    .map((m) => m[1]!)
    .filter((n) => n !== 'kind' && n !== 'businessId');
}

function fieldValue(record: Record<string, unknown>, field: readonly string[]): unknown {
  let value: unknown = record;
  for (const key of field) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

const NOT_A_WORD = /[.*#\s]/g;

function topicWord(value: unknown): string {
  if (typeof value !== 'string' && typeof value !== 'number') return '_';
  const word = String(value).replace(NOT_A_WORD, '_');
  return word === '' ? '_' : word;
}

/** AMQP topic matching: `*` is one word, `#` zero or more words. */
export function topicMatches(bindingKey: string, routingKey: string): boolean {
  const pattern = bindingKey.split('.');
  const words = routingKey.split('.');
  const match = (p: number, w: number): boolean => {
    if (p === pattern.length) return w === words.length;
    if (pattern[p] === '#') {
      for (let skip = w; skip <= words.length; skip++) if (match(p + 1, skip)) return true;
      return false;
    }
    if (w === words.length) return false;
    return (pattern[p] === '*' || pattern[p] === words[w]) && match(p + 1, w + 1);
  };
  return match(0, 0);
}
