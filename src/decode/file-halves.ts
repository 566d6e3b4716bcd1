/**
 * Reading one half of a split file (`FileHalves`, made by `file.ts`) in any thread: plain data in
 * (`HalfOfFile`), a reader of its records out (`readHalf`). `ingest/half-worker.ts` runs it.
 */
import { createReadStream } from 'node:fs';
import type { Candidate } from './candidate.js';
import type { KindName } from '../records/kind.js';
import { IgnoredFields, LEGACY, type ConversionContext } from '../records/legacy/index.js';
import { jsonArrayCandidates } from './json-array.js';
import type { JsonSplit } from './json-split.js';
import { legacyCsvCandidates } from './legacy.js';
import type { CsvSplit } from './csv-split.js';
import { OrderRanges } from './order-ranges.js';
import { mappedCsvCandidates, TRACKED_GROUPS, type MappedCsvOptions } from './mapped.js';
import { compileMapping, type CompiledMapping } from './mapping.js';

/**
 * The same records as `open()`, in two halves that other threads can read at once
 * (`ingest/halves.ts`), cut where no record spans the two (`csv-split.ts`, `json-split.ts`).
 */
export interface FileHalves {
  readonly first: HalfOfFile;
  readonly second: HalfOfFile;
  /**
   * After both halves were read, with their order tables (`HalfReader.orders`): whether no order
   * has rows in both. Only then are the halves' records, each folded and checked apart, exactly
   * those of one pass (an order in both halves is a contiguity error).
   */
  apart(firstOrders: Uint32Array, secondOrders: Uint32Array): boolean;
}

/** One half of a split file, and what reading it needs: plain data, for another thread (`readHalf`). */
export type HalfOfFile = CsvHalf | JsonHalf | MappedCsvHalf;

interface EitherHalf {
  readonly path: string;
  readonly part: 'first' | 'second';
  readonly kind: KindName;
  readonly businessId: string;
}

export interface CsvHalf extends EitherHalf {
  readonly format: 'v1-csv';
  readonly split: CsvSplit;
  /** The conversion context's data: `ignore` stands for an `IgnoredFields` of its own. */
  readonly context: Omit<ConversionContext, 'ignored'> & { readonly ignore: boolean };
}

export interface JsonHalf extends EitherHalf {
  readonly format: 'v2-json';
  readonly split: JsonSplit;
}

/** A mapped CSV's half: the mapping as text, compiled again in the thread that reads it. */
export interface MappedCsvHalf extends EitherHalf {
  readonly format: 'csv';
  readonly split: CsvSplit;
  readonly csv: MappedCsvOptions;
  readonly mapping: CompiledMapping['source'];
  readonly groupBy: string | undefined;
  readonly defaults: Readonly<Record<string, unknown>> | undefined;
  readonly businessIdPath: readonly string[];
}

/** Orders remembered for the contiguity check, per half (see `DecodeCsvOptions.maxTrackedOrders`). */
const TRACKED_ORDERS = 1_000_000;
export const READ_CHUNK = 64 * 1024;

/** What reads one half of a split file: its records, then its order table and the columns it ignored. */
export interface HalfReader {
  open(): AsyncIterable<Candidate>;
  readonly orders: OrderRanges;
  /** Columns beyond the layout, when the business's profile ignores them (listed in the answer). */
  readonly ignored: IgnoredFields | undefined;
}

/** One half of a split file (`FileHalves`), read as `csvHalf` or `jsonHalf` says. */
export function readHalf(half: HalfOfFile): HalfReader {
  if (half.format === 'csv') return mappedCsvHalf(half);
  return half.format === 'v1-csv' ? csvHalf(half) : jsonHalf(half);
}

const chunks = (path: string, start: number, end?: number) =>
  createReadStream(path, { start, ...(end !== undefined && { end }), highWaterMark: READ_CHUNK });

/**
 * One half of a split v2-JSON file: the first is the array up to the cut, closed with `]`; the
 * second is `[`, then the elements after the cut (and the file's own closing `]`).
 */
function jsonHalf(half: JsonHalf): HalfReader {
  const { path, split } = half;
  async function* bytes(): AsyncGenerator<Buffer> {
    if (half.part === 'first') {
      yield* chunks(path, 0, split.end - 1);
      yield Buffer.from(']');
      return;
    }
    yield Buffer.from('[');
    yield* chunks(path, split.comma + 1);
  }
  return { open: () => jsonArrayCandidates(bytes), orders: new OrderRanges(0), ignored: undefined };
}

/** The bytes of one half of a split CSV file (`csvHalf`). */
async function* halfBytes(
  path: string,
  split: CsvSplit,
  first: boolean,
): AsyncGenerator<Uint8Array> {
  if (first) {
    yield* chunks(path, 0, split.at - 1);
    return;
  }
  yield* chunks(path, 0, split.headerEnd - 1);
  yield* chunks(path, split.at);
}

/** One half of a split mapped CSV: read as `csvHalf` reads a v1 one, through its mapping compiled here. */
function mappedCsvHalf(half: MappedCsvHalf): HalfReader {
  const { path, split, kind, businessId } = half;
  const groups = new OrderRanges(TRACKED_GROUPS);
  const first = half.part === 'first';
  const mapped = {
    format: 'csv' as const,
    csv: half.csv,
    mapping: compileMapping(half.mapping.expression, half.mapping.limits),
    ...(half.groupBy !== undefined && { groupBy: half.groupBy }),
  };
  return {
    open: mappedCsvCandidates(() => halfBytes(path, split, first), {
      mapped,
      groups,
      ...(!first && { lineAfterHeader: split.line }),
      settings: {
        kind,
        businessIdPath: half.businessIdPath,
        businessId,
        defaults: half.defaults,
      },
    }),
    orders: groups,
    ignored: undefined,
  };
}

/**
 * One half of a split CSV file: the first is the file up to the cut; the second is the header
 * row, then the rows from the cut on, numbered from the cut's line.
 */
function csvHalf(half: CsvHalf): HalfReader {
  const { path, split, kind, businessId } = half;
  const { ignore, ...data } = half.context;
  const ignored = ignore ? new IgnoredFields() : undefined;
  const context: ConversionContext = { ...data, ...(ignored && { ignored }) };
  const orders = new OrderRanges(TRACKED_ORDERS);
  const first = half.part === 'first';
  return {
    open: legacyCsvCandidates(() => halfBytes(path, split, first), {
      converter: LEGACY[kind]!,
      businessId,
      context,
      orders,
      ...(!first && { lineAfterHeader: split.line }),
    }),
    orders,
    ignored,
  };
}
