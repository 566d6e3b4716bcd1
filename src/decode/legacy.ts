import { MalformedBody } from '../errors.js';
import type { ConversionContext, LegacyConverter, LegacyProblem } from '../records/legacy/mapping.js';
import { jsonLocator, senderTerms, type SenderTerms } from '../records/legacy/sender-terms.js';
import { csvLocation, decodeCsv, type CsvLayout, type CsvRecord } from './csv.js';

/** A legacy (v1) batch turned into v2 candidates, with its errors' way back to the sender's input. */
export interface ConvertedBatch {
  readonly records: unknown[];
  readonly senderTerms: SenderTerms;
}

interface Options {
  readonly converter: LegacyConverter;
  readonly businessId: string;
  readonly context: ConversionContext;
}

/** `{ "<root>": [ ...legacy records ] }` as spec §4.3 shows it, e.g. `{ "oOrders": [...] }`. */
export function convertLegacyJson(body: unknown, { converter, businessId, context }: Options): ConvertedBatch {
  const root = converter.root;
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !Array.isArray((body as Record<string, unknown>)[root])) {
    throw new MalformedBody({ detail: `Expected a JSON object with a "${root}" array (the v1 ${converter.kind} shape).` });
  }
  const extra = Object.keys(body).filter((key) => key !== root);
  if (extra.length > 0) {
    throw new MalformedBody({ detail: `Unknown top-level field(s) ${extra.map((k) => `"${k.slice(0, 40)}"`).join(', ')}; expected only "${root}".` });
  }
  const legacy = (body as Record<string, unknown[]>)[root]!;
  const problems = new Map<number, LegacyProblem[]>();
  const records = legacy.map((item, index) => convertOne(converter, item, context, problems, index));
  // The parsed body is held anyway: errors are traced back through the record as sent.
  const legacyRecord = (index: number) => legacy[index];
  return { records, senderTerms: senderTerms({ converter, businessId, locate: jsonLocator(root), problems, legacyRecord }) };
}

/** A CSV body, streamed: one record per order (or product), located by line and column. */
export async function convertLegacyCsv(body: AsyncIterable<Uint8Array | string>, { converter, businessId, context }: Options): Promise<ConvertedBatch> {
  const problems = new Map<number, LegacyProblem[]>();
  const records: unknown[] = [];
  // Only the line numbers of each record are kept for error messages, not the rows (nor the values).
  const located: CsvRecord[] = [];
  for await (const decoded of decodeCsv(body, converter.csv)) {
    const index = records.length;
    if (decoded.errors.length > 0) problems.set(index, [...decoded.errors]);
    records.push(convertOne(converter, decoded.value, context, problems, index));
    located.push({ value: EMPTY, errors: [], rows: decoded.rows, lineStarts: decoded.lineStarts });
  }
  const locate = (index: number, path: string) => {
    const record = located[index]!;
    if (path === '') {
      const first = record.rows[0];
      const last = record.rows.at(-1);
      return first === last ? `line ${first}` : `lines ${first}-${last}`;
    }
    return csvLocation(record, path, converter.csv);
  };
  // `sourceOf` needs the record's shape (which v2 line is which legacy item): rebuilt from the
  // line numbers, and only for a record whose errors are being explained.
  const legacyRecord = (index: number) => shapeOf(located[index]!, converter.csv);
  return { records, senderTerms: senderTerms({ converter, businessId, locate, problems, legacyRecord }) };
}

/**
 * A decoded CSV record's shape without its values: one empty item per line, and for two-level
 * layouts (work orders) one empty part per row of the line. Every CSV line item is an object,
 * so this is exactly the legacy record's structure.
 */
function shapeOf(record: CsvRecord, layout: CsvLayout): Record<string, unknown> {
  const { lines } = layout;
  if (lines === undefined) return {};
  const { rows, lineStarts } = record;
  const empty = (length: number) => Array.from({ length }, () => ({}));
  if (lines.parts === undefined || lineStarts === undefined) return { [lines.name]: empty(rows.length) };
  const parts = lines.parts.name;
  return { [lines.name]: lineStarts.map((start, i) => ({ [parts]: empty((lineStarts[i + 1] ?? rows.length) - start) })) };
}

const EMPTY: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

function convertOne(
  converter: LegacyConverter,
  item: unknown,
  context: ConversionContext,
  problems: Map<number, LegacyProblem[]>,
  index: number,
): unknown {
  const found: LegacyProblem[] = [];
  const record = converter.toV2(item, context, found);
  if (found.length > 0) problems.set(index, [...(problems.get(index) ?? []), ...found]);
  return record;
}
