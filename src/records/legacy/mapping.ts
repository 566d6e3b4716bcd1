import type { CsvField } from './csv-layout.js';
import { receivedType } from '../issues.js';
import { LEGACY_DATE_FORMS, legacyDateToUtc } from './dates.js';
import type { IgnoredFields } from './ignored-fields.js';
import { getKeys, isPlain, keysOf, type Plain, setKeys, setPath } from './paths.js';
import type { LegacyConverter, LegacyField, LegacyMapping, LegacyProblem } from './converter.js';

/**
 * Fills what the record lacks from the onboarding profile (what the partner sent always wins),
 * or, with `overwrite`, sets the values outright (the order's own id on profile-supplied items).
 * Runs three times for every legacy record, so its paths are split once (`compiled`) and its
 * values copied by a plain-JSON clone: splitting each path and `structuredClone` on every record
 * were a fifth of a CSV drop's CPU.
 */
export function applyDefaults(
  record: Plain,
  values: Readonly<Record<string, unknown>>,
  overwrite = false,
): void {
  for (const path in values)
    if (Object.hasOwn(values, path)) applyAt(record, compiledPath(path), values[path], overwrite);
}

/** A default's path: plain keys, or an array's keys then the path inside each of its items (`a.b[].c`). */
type CompiledPath =
  | { readonly keys: readonly string[] }
  | { readonly items: readonly string[]; readonly each: CompiledPath };

/** Paths come from mappings and profiles, a fixed set; the cap only guards against the unexpected. */
const compiled = new Map<string, CompiledPath>();
const MAX_COMPILED = 10_000;

function compiledPath(path: string): CompiledPath {
  const known = compiled.get(path);
  if (known) return known;
  const at = path.indexOf('[].');
  const made: CompiledPath =
    at === -1
      ? { keys: keysOf(path) }
      : { items: keysOf(path.slice(0, at)), each: compiledPath(path.slice(at + 3)) };
  if (compiled.size < MAX_COMPILED) compiled.set(path, made);
  return made;
}

function applyAt(node: Plain, path: CompiledPath, value: unknown, overwrite: boolean): void {
  if ('items' in path) {
    const items = getKeys(node, path.items);
    if (Array.isArray(items))
      for (const item of items) if (isPlain(item)) applyAt(item, path.each, value, overwrite);
    return;
  }
  if (overwrite || getKeys(node, path.keys) === undefined) setKeys(node, path.keys, copyOf(value));
}

/** A fresh copy of a configured value (plain JSON from YAML), so records never share one. */
function copyOf(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copyOf);
  if (Object.getPrototypeOf(value) !== Object.prototype) return structuredClone(value);
  const copy: Plain = {};
  for (const key in value) if (Object.hasOwn(value, key)) copy[key] = copyOf((value as Plain)[key]);
  return copy;
}

/**
 * Checks one legacy value against its declared type and converts it; undefined when absent or
 * wrong. `prefix`: where the field sits (`lines[2].`), joined to its name only for a problem.
 */
export function convert(
  field: LegacyField,
  value: unknown,
  prefix: string,
  problems: LegacyProblem[],
): unknown {
  if (value === undefined || value === null) return undefined;
  const expected = field.type === 'date' ? 'string' : field.type;
  if (typeof value !== expected || (typeof value === 'number' && !Number.isFinite(value))) {
    problems.push({
      path: prefix + field.legacy,
      message: `Expected ${expected}, received ${receivedType(value)}`,
    });
    return undefined;
  }
  if (field.type === 'date') {
    const utc = legacyDateToUtc(value as string);
    if (utc === undefined)
      problems.push({
        path: prefix + field.legacy,
        message: `Expected a date (${LEGACY_DATE_FORMS}), received "${String(value).slice(0, 40)}"`,
      });
    return utc;
  }
  return field.asString ? String(value) : value;
}

/**
 * Fields beyond the shape: refused, or — when the profile says to ignore them — noted in
 * `ignored` under their place with item indexes left out (`rOrderLines[].Colour`).
 */
export function refuseUnknown(
  legacy: Plain,
  known: ReadonlySet<string>,
  prefix: string,
  problems: LegacyProblem[],
  ignored?: IgnoredFields,
): void {
  for (const key of Object.keys(legacy)) {
    if (known.has(key)) continue;
    if (ignored) ignored.add(`${prefix.replace(/\[\d+\]/g, '[]')}${key}`);
    else
      problems.push({
        path: `${prefix}${key}`,
        message: `Unknown field; expected only ${[...known].join(', ')}`,
      });
  }
}

/** The mapping with header fields renamed (spec name → wire name); line fields keep theirs. */
function renamed(mapping: LegacyMapping, names: Readonly<Record<string, string>>): LegacyMapping {
  const wire = (legacy: string) => (Object.hasOwn(names, legacy) ? names[legacy]! : legacy);
  const { lines } = mapping;
  return {
    ...mapping,
    header: mapping.header.map((field) => ({ ...field, legacy: wire(field.legacy) })),
    ...(lines && {
      lines: {
        ...lines,
        ...(lines.fromHeader && {
          fromHeader: lines.fromHeader.map((copy) => ({ ...copy, legacy: wire(copy.legacy) })),
        }),
      },
    }),
    ...(mapping.groupBy !== undefined && { groupBy: wire(mapping.groupBy) }),
  };
}

export const csvField = (field: LegacyField): CsvField => ({
  name: field.legacy,
  type: field.type,
});

/** Converts `fields` of one legacy object into `target` (v2 paths relative to it); `prefix` locates problems. */
export function mapFields(
  fields: readonly LegacyField[],
  source: Plain,
  prefix: string,
  target: Plain,
  problems: LegacyProblem[],
): void {
  for (const field of fields) {
    const value = convert(field, source[field.legacy], prefix, problems);
    if (value !== undefined) for (const to of field.to) setPath(target, to, value);
  }
}

/** v2 path → the legacy field that fills it, for `sourceOf`. */
export function reverseOf(fields: readonly LegacyField[]): Map<string, string> {
  const reverse = new Map<string, string>();
  for (const field of fields) for (const to of field.to) reverse.set(to, field.legacy);
  return reverse;
}

/** Whether the partner sent a legacy field of `source` (null counts as not sent, as in `convert`). */
export const sentIn =
  (source: unknown) =>
  (name: string): boolean =>
    isPlain(source) && source[name] !== undefined && source[name] !== null;

export function defineLegacyMapping(mapping: LegacyMapping): LegacyConverter {
  const lines = mapping.lines;
  const headerNames = new Set(
    mapping.header.map((f) => f.legacy).concat(lines ? [lines.legacy] : []),
  );
  const lineNames = new Set(lines?.fields.map((f) => f.legacy));
  const reverse = reverseOf(mapping.header);
  const lineReverse = reverseOf(lines?.fields ?? []);
  for (const copy of lines?.fromHeader ?? [])
    for (const to of copy.to) lineReverse.set(to, `^${copy.legacy}`);
  const linePath = lines ? new RegExp(`^${lines.v2}\\[(\\d+)\\](?:\\.(.+))?$`) : undefined;
  const received = mapping.receivedAt?.length
    ? (at: string) => Object.fromEntries(mapping.receivedAt!.map((path) => [path, at]))
    : undefined;
  const variants = new Map<string, LegacyConverter>();

  const converter: LegacyConverter = {
    kind: mapping.kind,
    root: mapping.root,
    derived: new Set(mapping.derived),
    receiptTimePaths: mapping.receivedAt ?? [],
    csv: {
      header: mapping.header.map(csvField),
      ...(lines ? { lines: { name: lines.legacy, fields: lines.fields.map(csvField) } } : {}),
      ...(mapping.groupBy ? { groupBy: mapping.groupBy } : {}),
    },

    toV2(legacy, context, problems) {
      if (!isPlain(legacy)) return legacy; // v2 validation reports `(record): Expected object, …`
      refuseUnknown(legacy, headerNames, '', problems, context.ignored);
      const record: Plain = {};
      const intoItems: Record<string, unknown> = {};
      for (const field of mapping.header) {
        const value = convert(field, legacy[field.legacy], '', problems);
        if (value === undefined) continue;
        for (const to of field.to) {
          if (to.includes('[]')) intoItems[to] = value;
          else setPath(record, to, value);
        }
      }
      if (lines) {
        const items = legacy[lines.legacy];
        if (Array.isArray(items)) {
          record[lines.v2] = items.map((item, i) => {
            if (!isPlain(item)) return item;
            const prefix = `${lines.legacy}[${i}].`;
            refuseUnknown(item, lineNames, prefix, problems, context.ignored);
            const line: Plain = {};
            for (const copy of lines.fromHeader ?? []) {
              const value = legacy[copy.legacy];
              if (typeof value === 'string') for (const to of copy.to) setPath(line, to, value);
            }
            mapFields(lines.fields, item, prefix, line, problems);
            return line;
          });
        } else if (items !== undefined) {
          record[lines.v2] = items; // wrong type: v2 validation words it, sourceOf points at the legacy array
        }
      }
      // Set outright, after the lines exist (a `lines[]` path reaches every line).
      if (received) applyDefaults(record, received(context.receivedAt), true);
      if (context.defaults) applyDefaults(record, context.defaults);
      applyDefaults(record, intoItems, true); // items the profile supplied get the order's own values
      mapping.derive?.(record);
      return record;
    },

    sourceOf(v2Path, legacy) {
      if (v2Path === '(record)') return '';
      const sent = sentIn(legacy);
      const direct =
        reverse.get(v2Path.replace(/\[\d+\]/g, '[]')) ?? fieldUnder(reverse, v2Path, sent);
      if (direct !== undefined) return direct;
      if (!lines || !linePath) return undefined;
      if (v2Path === lines.v2) return lines.legacy;
      const match = linePath.exec(v2Path);
      if (!match) return undefined;
      const [, index, rest] = match;
      if (rest === undefined) return `${lines.legacy}[${index}]`;
      const items = isPlain(legacy) ? legacy[lines.legacy] : undefined;
      const sentInLine = sentIn(Array.isArray(items) ? items[Number(index)] : undefined);
      const field =
        lineReverse.get(rest) ??
        fieldUnder(lineReverse, rest, (name) =>
          name.startsWith('^') ? sent(name.slice(1)) : sentInLine(name),
        );
      if (field === undefined) return undefined;
      return field.startsWith('^') ? field.slice(1) : `${lines.legacy}[${index}].${field}`;
    },

    withNames(names) {
      const entries = Object.entries(names ?? {}).filter(([spec, wire]) => spec !== wire);
      if (entries.length === 0) return converter;
      const key = JSON.stringify(entries.sort());
      let variant = variants.get(key);
      if (!variant) {
        variant = defineLegacyMapping(renamed(mapping, Object.fromEntries(entries)));
        variants.set(key, variant);
      }
      return variant;
    },
  };
  return converter;
}

/**
 * The legacy field behind a v2 object that is missing altogether (`dates: Required`,
 * `shipmentLines[0].quantities: Required`). The converter creates an object only when a field
 * fills it, so every field under it was absent or refused: the first one the partner did not
 * send is the one to name (a refused one is already reported where it was found). Not for
 * array items (`shipAddresses[0]`): those come whole from the profile.
 */
export function fieldUnder(
  table: ReadonlyMap<string, string>,
  v2Path: string,
  sent: (legacy: string) => boolean,
): string | undefined {
  if (v2Path.endsWith(']')) return undefined;
  let first: string | undefined;
  for (const [to, legacy] of table) {
    if (!to.startsWith(`${v2Path}.`)) continue;
    if (!sent(legacy)) return legacy;
    first ??= legacy;
  }
  return first;
}
