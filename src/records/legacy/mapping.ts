import type { CsvField, CsvLayout } from '../../decode/csv-layout.js';
import type { KindName } from '../kind.js';
import { receivedType } from '../issues.js';
import { LEGACY_DATE_FORMS, legacyDateToUtc } from './dates.js';
import { getPath, isPlain, type Plain, setPath } from './paths.js';

/**
 * Legacy (v1) shapes are converted to v2 by declarative field mappings: each legacy field
 * names the v2 paths it fills. The same table drives the conversion, the CSV layout, and
 * the way back — from a v2 path that failed validation to the partner's own field — so an
 * error always points at what the partner sent.
 */
export type LegacyType = 'string' | 'number' | 'date';

export interface LegacyField {
  readonly legacy: string;
  readonly type: LegacyType;
  /**
   * v2 paths this field fills (relative to the record, or to the v2 line for line fields). Empty:
   * accepted, not forwarded. `shipAddresses[].shipmentId` fills every item, after the profile.
   */
  readonly to: readonly string[];
  /** A legacy number that v2 holds as a string (e.g. `LineNumber` → `line`). */
  readonly asString?: boolean;
}

export interface LegacyMapping {
  readonly kind: KindName;
  /** The JSON body's root array, e.g. `oOrders`. */
  readonly root: string;
  readonly header: readonly LegacyField[];
  readonly lines?: {
    readonly legacy: string;
    readonly v2: string;
    readonly fields: readonly LegacyField[];
    /** Header fields repeated on every v2 line, e.g. `OrdNumber` → `shipmentId`. */
    readonly fromHeader?: ReadonlyArray<{
      readonly legacy: string;
      readonly to: readonly string[];
    }>;
  };
  /** CSV: the header field whose value identifies one record across its rows. */
  readonly groupBy?: string;
  /**
   * v2 paths set to the time the batch was received (the legacy shape has no such date).
   * `lines[].dates.receipt` sets it on every line, like a profile path.
   */
  readonly receivedAt?: readonly string[];
  /** v2 values computed from mapped ones (docs/legacy-v1.md#mapping-legacy-field--v2-path); skipped when their inputs are missing. */
  readonly derive?: (record: Record<string, unknown>) => void;
  /** Paths `derive` sets: an error there is a consequence of an error on its inputs. */
  readonly derived?: readonly string[];
}

/** A problem found while converting, at a legacy path relative to the record. */
export interface LegacyProblem {
  readonly path: string;
  readonly message: string;
}

export interface ConversionContext {
  /** The business's onboarding profile for this kind: v2 path (`[]` = every item) → value. */
  readonly defaults?: Readonly<Record<string, unknown>>;
  /** ISO timestamp of receipt, for `receivedAt` paths. */
  readonly receivedAt: string;
}

export interface LegacyConverter {
  readonly kind: KindName;
  readonly root: string;
  readonly csv: CsvLayout;
  readonly derived: ReadonlySet<string>;
  /**
   * v2 paths set to the time of receipt (`[]` = every item). They differ between two tries of
   * the same input, so message ids are computed without them (ids must be stable).
   */
  readonly receiptTimePaths: readonly string[];
  /** The v2 candidate record; conversion problems are pushed to `problems`. */
  toV2(legacy: unknown, context: ConversionContext, problems: LegacyProblem[]): unknown;
  /**
   * The legacy path (relative to the record) that fed `v2Path`; `''` for the record itself;
   * undefined when none did. `legacy` is the record as the partner sent it (from CSV, only its
   * shape: its lines and parts, no values): a v2 line index does not always tell which legacy
   * item it came from (work orders: one v2 line per finished good and per part), and a v2
   * object that is missing altogether is best blamed on the legacy field that is absent.
   */
  sourceOf(v2Path: string, legacy: unknown): string | undefined;
}

/**
 * Fills what the record lacks from the onboarding profile (what the partner sent always wins),
 * or, with `overwrite`, sets the values outright (the order's own id on profile-supplied items).
 */
export function applyDefaults(
  record: Plain,
  values: Readonly<Record<string, unknown>>,
  overwrite = false,
): void {
  for (const [path, value] of Object.entries(values)) {
    const each = path.indexOf('[].');
    if (each === -1) {
      if (overwrite || getPath(record, path) === undefined)
        setPath(
          record,
          path,
          typeof value === 'object' && value !== null ? structuredClone(value) : value,
        );
      continue;
    }
    const items = getPath(record, path.slice(0, each));
    if (!Array.isArray(items)) continue;
    for (const item of items)
      if (isPlain(item)) applyDefaults(item, { [path.slice(each + 3)]: value }, overwrite);
  }
}

/** Checks one legacy value against its declared type and converts it; undefined when absent or wrong. */
export function convert(
  field: LegacyField,
  value: unknown,
  at: string,
  problems: LegacyProblem[],
): unknown {
  if (value === undefined || value === null) return undefined;
  const expected = field.type === 'date' ? 'string' : field.type;
  if (typeof value !== expected || (typeof value === 'number' && !Number.isFinite(value))) {
    problems.push({ path: at, message: `Expected ${expected}, received ${receivedType(value)}` });
    return undefined;
  }
  if (field.type === 'date') {
    const utc = legacyDateToUtc(value as string);
    if (utc === undefined)
      problems.push({
        path: at,
        message: `Expected a date (${LEGACY_DATE_FORMS}), received "${String(value).slice(0, 40)}"`,
      });
    return utc;
  }
  return field.asString ? String(value) : value;
}

export function refuseUnknown(
  legacy: Plain,
  known: ReadonlySet<string>,
  prefix: string,
  problems: LegacyProblem[],
): void {
  for (const key of Object.keys(legacy)) {
    if (!known.has(key))
      problems.push({
        path: `${prefix}${key}`,
        message: `Unknown field; expected only ${[...known].join(', ')}`,
      });
  }
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
    const value = convert(field, source[field.legacy], `${prefix}${field.legacy}`, problems);
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

  return {
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
      refuseUnknown(legacy, headerNames, '', problems);
      const record: Plain = {};
      const intoItems: Record<string, unknown> = {};
      for (const field of mapping.header) {
        const value = convert(field, legacy[field.legacy], field.legacy, problems);
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
            refuseUnknown(item, lineNames, prefix, problems);
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
  };
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
