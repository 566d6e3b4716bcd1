import type { IgnoredFields } from './ignored-fields.js';
import { receivedType } from '../issues.js';
import {
  applyDefaults,
  csvField,
  fieldUnder,
  mapFields,
  refuseUnknown,
  reverseOf,
  sentIn,
} from './mapping.js';
import type { LegacyConverter, LegacyField, LegacyProblem } from './converter.js';
import { isPlain, type Plain } from './paths.js';

/**
 * v1 work orders (`wOrders`, spec §4.3) → v2 work orders (§2.7). The legacy shape has two
 * levels (`FinishedGoods`, each with its `FGParts`) where v2 has one list of lines told apart
 * by `role`, so this converter is written by hand around the engine's helpers: each finished
 * good becomes a `finished_good` line followed by one `component` line per part.
 * What the legacy shape lacks (customer, class, warehouse) comes from the onboarding profile.
 */
const HEADER: readonly LegacyField[] = [
  { legacy: 'AccountID', type: 'string', to: ['identifiers.businessId'] },
  // The legacy order number is both the order id and the reference the business knows it by.
  { legacy: 'OrdNumber', type: 'string', to: ['identifiers.id', 'workOrder.customerRef'] },
  { legacy: 'LocationID', type: 'string', to: ['location.site'] },
  // A stock pool is the stock's owner in the legacy warehouse system.
  { legacy: 'StockPool', type: 'string', to: ['location.ownerId'] },
  // For work orders the legacy order type IS the kind of work (e.g. KITTING), unlike the other
  // kinds where v2's `order.type` is set by the platform.
  { legacy: 'OrdType', type: 'string', to: ['workOrder.type'] },
  // No v2 field is listed for these; passed through (v2 objects are loose) rather than lost.
  { legacy: 'ReqType', type: 'string', to: ['workOrder.requestType'] },
  { legacy: 'CreatedDate', type: 'date', to: ['dates.created'] },
];

const FINISHED_GOOD: readonly LegacyField[] = [
  { legacy: 'LineNumber', type: 'number', to: ['line'], asString: true },
  { legacy: 'ProductID', type: 'string', to: ['skuId'] },
  // A finished good says how many to make (§2.7: `quantities.ordered` on a finished good line).
  { legacy: 'Qty', type: 'number', to: ['quantities.ordered'] },
  // v2 lists no date for work orders; the due date travels on the line it belongs to.
  { legacy: 'ExpDelDate', type: 'date', to: ['dates.due'] },
];

const PART: readonly LegacyField[] = [
  { legacy: 'ProductID', type: 'string', to: ['skuId'] },
  // A part says how many are needed (§2.7: `quantities.required` on a component line).
  { legacy: 'Qty', type: 'number', to: ['quantities.required'] },
];

const GOODS = 'FinishedGoods';
const PARTS = 'FGParts';
const HEADER_NAMES = new Set([...HEADER.map((f) => f.legacy), GOODS]);
const GOOD_NAMES = new Set([...FINISHED_GOOD.map((f) => f.legacy), PARTS]);
const PART_NAMES = new Set(PART.map((f) => f.legacy));
const HEADER_REVERSE = reverseOf(HEADER);
const GOOD_REVERSE = reverseOf(FINISHED_GOOD);
const PART_REVERSE = reverseOf(PART);
const LINE_PATH = /^lines\[(\d+)\](?:\.(.+))?$/;

/** The v2 lines of one finished good: its own line, then one per part, in the legacy order. */
function linesOf(
  good: unknown,
  k: number,
  orderNumber: unknown,
  problems: LegacyProblem[],
  ignored: IgnoredFields | undefined,
): unknown[] {
  if (!isPlain(good)) return [good]; // v2 validation words it; sourceOf points at `FinishedGoods[k]`
  const prefix = `${GOODS}[${k}].`;
  refuseUnknown(good, GOOD_NAMES, prefix, problems, ignored);
  const workOrderId = typeof orderNumber === 'string' ? { workOrderId: orderNumber } : {};
  const finished: Plain = { ...workOrderId, role: 'finished_good' };
  mapFields(FINISHED_GOOD, good, prefix, finished, problems);
  const out: unknown[] = [finished];

  const parts = good[PARTS];
  if (parts !== undefined && parts !== null && !Array.isArray(parts)) {
    // No v2 value could word this one: the parts become lines, not a v2 array of their own.
    problems.push({
      path: `${prefix}${PARTS}`,
      message: `Expected array, received ${receivedType(parts)}`,
    });
  }
  if (!Array.isArray(parts)) return out; // no component lines: v2's line rules say so
  for (const [j, part] of parts.entries()) {
    if (!isPlain(part)) {
      out.push(part); // v2 validation words it; sourceOf points at `FinishedGoods[k].FGParts[j]`
      continue;
    }
    const at = `${prefix}${PARTS}[${j}].`;
    refuseUnknown(part, PART_NAMES, at, problems, ignored);
    // A part's line number is its finished good's, then its own position: 1.1, 1.2, 2.1 …
    const line = typeof finished.line === 'string' ? { line: `${finished.line}.${j + 1}` } : {};
    const component: Plain = { ...workOrderId, ...line, role: 'component' };
    mapFields(PART, part, at, component, problems);
    out.push(component);
  }
  return out;
}

/**
 * The legacy item behind each v2 line (`FinishedGoods[1]`, `FinishedGoods[1].FGParts[0]`), in
 * the order `linesOf` builds them. Recomputed from the record as sent, only when an error is
 * explained, so a valid batch keeps no index map.
 */
function lineSources(legacy: unknown): string[] {
  const goods = isPlain(legacy) ? legacy[GOODS] : undefined;
  if (!Array.isArray(goods)) return [];
  const out: string[] = [];
  goods.forEach((good, k) => {
    out.push(`${GOODS}[${k}]`);
    const parts = isPlain(good) ? good[PARTS] : undefined;
    if (Array.isArray(parts))
      for (let j = 0; j < parts.length; j++) out.push(`${GOODS}[${k}].${PARTS}[${j}]`);
  });
  return out;
}

/** The legacy item at `FinishedGoods[k]` or `FinishedGoods[k].FGParts[j]`. */
function itemAt(legacy: unknown, k: number, j: number | undefined): unknown {
  const good =
    isPlain(legacy) && Array.isArray(legacy[GOODS]) ? (legacy[GOODS] as unknown[])[k] : undefined;
  if (j === undefined) return good;
  const parts = isPlain(good) ? good[PARTS] : undefined;
  return Array.isArray(parts) ? parts[j] : undefined;
}

export const workOrdersV1: LegacyConverter = {
  kind: 'work-orders',
  root: 'wOrders',
  derived: new Set(),
  receiptTimePaths: [],
  csv: {
    header: HEADER.map(csvField),
    // One CSV row per part; the finished good's values repeat on each of its parts' rows.
    lines: {
      name: GOODS,
      fields: FINISHED_GOOD.map(csvField),
      parts: { name: PARTS, fields: PART.map(csvField), groupBy: 'LineNumber' },
    },
    groupBy: 'OrdNumber',
  },

  toV2(legacy, context, problems) {
    if (!isPlain(legacy)) return legacy; // v2 validation reports `(record): Expected object, …`
    refuseUnknown(legacy, HEADER_NAMES, '', problems, context.ignored);
    const record: Plain = {};
    mapFields(HEADER, legacy, '', record, problems);
    const goods = legacy[GOODS];
    if (Array.isArray(goods))
      record.lines = goods.flatMap((good, k) =>
        linesOf(good, k, legacy.OrdNumber, problems, context.ignored),
      );
    else if (goods !== undefined) record.lines = goods; // wrong type: v2 validation words it
    if (context.defaults) applyDefaults(record, context.defaults);
    return record;
  },

  sourceOf(v2Path, legacy) {
    if (v2Path === '(record)') return '';
    const header = HEADER_REVERSE.get(v2Path) ?? fieldUnder(HEADER_REVERSE, v2Path, sentIn(legacy));
    if (header !== undefined) return header;
    // The line rules (one finished good, at least one component) are about the finished goods sent.
    if (v2Path === 'lines') return GOODS;
    const match = LINE_PATH.exec(v2Path);
    if (!match) return undefined;
    const source = lineSources(legacy)[Number(match[1])];
    const rest = match[2];
    if (source === undefined || rest === undefined || rest === 'role') return source; // role: set here, never wrong
    if (rest === 'workOrderId') return 'OrdNumber';
    const [, k, j] = /^\w+\[(\d+)\](?:\.\w+\[(\d+)\])?$/.exec(source)!;
    const good = `${GOODS}[${k}]`;
    // A component's line number is made from its finished good's `LineNumber`.
    if (rest === 'line') return `${good}.LineNumber`;
    const table = j === undefined ? GOOD_REVERSE : PART_REVERSE;
    const field =
      table.get(rest) ??
      fieldUnder(
        table,
        rest,
        sentIn(itemAt(legacy, Number(k), j === undefined ? undefined : Number(j))),
      );
    return field === undefined ? undefined : `${source}.${field}`;
  },

  // No work-order field has a business-specific wire name.
  withNames() {
    return workOrdersV1;
  },
};
