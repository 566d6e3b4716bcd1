import type { KindName } from '../records/kind.js';

/**
 * Routing keys from a template such as `{kind}.{businessId}` or
 * `{kind}.{businessId}.{identifiers.site}`. Each placeholder fills one topic word: dots,
 * `*`, `#` and white space inside a value become `_` so a value can never add words or
 * wildcards; a missing value becomes `_`.
 */
export type RoutingKeyFor = (
  kind: KindName,
  businessId: string,
  record: Record<string, unknown>,
) => string;

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

  return (kind, businessId, record) => {
    let key = '';
    for (const part of parts) {
      if (part === 'kind') key += kind;
      else if (part === 'businessId') key += topicWord(businessId);
      else if (typeof part === 'string') key += part;
      else key += topicWord(fieldValue(record, part.field));
    }
    return key;
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
