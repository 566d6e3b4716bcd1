import { MalformedBody } from '../errors.js';
import type {
  ConversionContext,
  LegacyConverter,
  LegacyProblem,
} from '../records/legacy/converter.js';
import type { Candidate } from './candidate.js';
import {
  explainRecord,
  jsonLocator,
  locatedProblems,
  senderTerms,
  type RecordTerms,
  type SenderTerms,
} from '../records/legacy/sender-terms.js';
import { csvLocation, decodeCsv, type CsvLayout, type CsvRecord } from './csv.js';
import type { OrderRanges } from './order-ranges.js';

/** A legacy (v1) batch turned into v2 candidates, with its errors' way back to the sender's input. */
export interface ConvertedBatch {
  readonly mode: 'array';
  readonly records: unknown[];
  readonly senderTerms: SenderTerms;
}

interface Options {
  readonly converter: LegacyConverter;
  readonly businessId: string;
  readonly context: ConversionContext;
}

/** For CSV: the part of a split file read (`csv-split.ts`), and the order table to fill. */
interface CsvOptions extends Options {
  readonly orders?: OrderRanges;
  readonly lineAfterHeader?: number;
}

/** `{ "<root>": [ ...legacy records ] }` as spec §4.3 shows it, e.g. `{ "oOrders": [...] }`. */
export function convertLegacyJson(body: unknown, options: Options): ConvertedBatch {
  const { businessId, context } = options;
  const converter = options.converter.withNames(context.names);
  const root = converter.root;
  if (
    typeof body !== 'object' ||
    body === null ||
    Array.isArray(body) ||
    !Array.isArray((body as Record<string, unknown>)[root])
  ) {
    throw new MalformedBody({
      detail: `Expected a JSON object with a "${root}" array (the v1 ${converter.kind} shape).`,
    });
  }
  const extra = Object.keys(body).filter((key) => key !== root);
  if (context.ignored) for (const key of extra) context.ignored.add(key);
  else if (extra.length > 0) {
    throw new MalformedBody({
      detail: `Unknown top-level field(s) ${extra.map((k) => `"${k.slice(0, 40)}"`).join(', ')}; expected only "${root}".`,
    });
  }
  const legacy = (body as Record<string, unknown[]>)[root]!;
  const problems = new Map<number, LegacyProblem[]>();
  const records = legacy.map((item, index) =>
    convertOne(converter, item, context, problems, index),
  );
  // The parsed body is held anyway: errors are traced back through the record as sent.
  const legacyRecord = (index: number) => legacy[index];
  return {
    mode: 'array',
    records,
    senderTerms: senderTerms({
      converter,
      businessId,
      locate: jsonLocator(root),
      problems,
      legacyRecord,
    }),
  };
}

/**
 * The candidates of a CSV input, one per order (or product), each able to word its errors by
 * line and column. Returns a function that reads the input from the start each time it is
 * called, holding one record at a time.
 */
export function legacyCsvCandidates(
  read: () => AsyncIterable<Uint8Array | string>,
  options: CsvOptions,
): () => AsyncIterable<Candidate> {
  const { businessId, context } = options;
  const converter = options.converter.withNames(context.names);
  const layout = converter.csv;
  const { ignored } = context;
  return async function* candidates() {
    const { orders, lineAfterHeader } = options;
    for await (const decoded of decodeCsv(read(), layout, {
      ...(ignored && { ignoreColumn: (name: string) => ignored.add(name) }),
      ...(orders && { orders }),
      ...(lineAfterHeader !== undefined && { lineAfterHeader }),
    })) {
      const problems: LegacyProblem[] = [...decoded.errors];
      const record = converter.toV2(decoded.value, context, problems);
      const terms: RecordTerms = {
        converter,
        businessId,
        problems: problems.length > 0 ? problems : undefined,
        locate: (path) => locateCsv(decoded, path, layout),
        // `sourceOf` needs the record's shape (which v2 line is which legacy item), rebuilt from
        // the line numbers, and only for a record whose errors are being explained.
        legacy: () => shapeOf(decoded, layout),
      };
      yield {
        record,
        early: locatedProblems(terms),
        explain: (v2Errors) => explainRecord(terms, v2Errors),
        line: decoded.rows[0],
      };
    }
  };
}

function locateCsv(record: CsvRecord, path: string, layout: CsvLayout): string {
  if (path === '') {
    const first = record.rows[0];
    const last = record.rows.at(-1);
    return first === last ? `line ${first}` : `lines ${first}-${last}`;
  }
  return csvLocation(record, path, layout);
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
  if (lines.parts === undefined || lineStarts === undefined)
    return { [lines.name]: empty(rows.length) };
  const parts = lines.parts.name;
  return {
    [lines.name]: lineStarts.map((start, i) => ({
      [parts]: empty((lineStarts[i + 1] ?? rows.length) - start),
    })),
  };
}

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
