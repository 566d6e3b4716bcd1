import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { MalformedBody, PayloadTooLarge } from '../errors.js';
import type { Candidate } from './candidate.js';
import type { KindName, RecordKind } from '../records/kind.js';
import {
  IgnoredFields,
  LEGACY,
  type ConversionContext,
  type LegacyConverter,
  type SenderTerms,
} from '../records/legacy/index.js';
import { parseJson } from './json.js';
import { jsonArrayCandidates } from './json-array.js';
import { findJsonSplit, type JsonSplit } from './json-split.js';
import { convertLegacyJson, legacyCsvCandidates } from './legacy.js';
import { findCsvSplit, type CsvSplit } from './csv-split.js';
import { OrderRanges } from './order-ranges.js';
import { decodeX12, type X12DecodeOptions } from './x12/index.js';

export type FileFormat = 'v1-csv' | 'v1-json' | 'v2-json' | 'x12';

/** The records part of a batch read from a local (spooled) file. */
export type FileRecords =
  | { mode: 'array'; records: unknown[]; senderTerms?: SenderTerms }
  | { mode: 'stream'; open: () => AsyncIterable<Candidate>; halves?: FileHalves };

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
export type HalfOfFile = CsvHalf | JsonHalf;

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

export interface FileDecodeOptions {
  readonly kind: RecordKind;
  readonly format: FileFormat;
  readonly businessId: string;
  readonly context: ConversionContext;
  /** JSON has no streaming parser here: a JSON file larger than this is refused. */
  readonly maxJsonBytes: number;
  /**
   * A v1 CSV file of at least this many bytes, or a v2-JSON file of at least `JSON_HALVES_FACTOR`
   * times as many, is offered in two halves (`FileHalves`).
   * @default never
   */
  readonly halvesFromBytes?: number;
  /** X12 only: the interchange accepted before under the same sender and ISA13 (a duplicate). */
  readonly earlierInterchange?: X12DecodeOptions['earlier'];
}

/**
 * Decodes a dropped file, already on local disk. v1 CSV and v2 JSON are streamed (read once, each
 * valid record spooled for the publish pass) so a 1 GB file stays in bounded memory; a v1 JSON
 * file is parsed whole, up to `maxJsonBytes`, because its errors are traced back through the
 * legacy document as sent.
 */
export async function decodeFile(path: string, options: FileDecodeOptions): Promise<FileRecords> {
  const { kind, format, businessId, context } = options;
  if (format === 'x12') {
    return decodeX12(path, {
      kind: kind.name,
      businessId,
      ...(context.defaults && { defaults: context.defaults }),
      maxBytes: options.maxJsonBytes,
      ...(options.earlierInterchange && { earlier: options.earlierInterchange }),
    });
  }
  const converter = LEGACY[kind.name];
  if (format !== 'v2-json' && !converter)
    throw new MalformedBody({ detail: `There is no v1 shape for ${kind.name}.` });
  if (format === 'v1-csv') {
    const open = legacyCsvCandidates(() => createReadStream(path, { highWaterMark: 64 * 1024 }), {
      converter: converter!,
      businessId,
      context,
    });
    const halves = await csvHalves(path, options, converter!);
    return { mode: 'stream', open, ...(halves && { halves }) };
  }

  if (format === 'v2-json') {
    const read = () => createReadStream(path, { highWaterMark: READ_CHUNK });
    const halves = await jsonHalves(path, options);
    return { mode: 'stream', open: () => jsonArrayCandidates(read), ...(halves && { halves }) };
  }

  const { size } = await stat(path);
  if (size > options.maxJsonBytes) {
    throw new PayloadTooLarge({
      detail: `The v1 JSON file has ${size} bytes; v1 JSON files are limited to ${options.maxJsonBytes} bytes (v1 CSV and v2 JSON files are not).`,
    });
  }
  const bytes = await readFile(path);
  return convertLegacyJson(parseJson(bytes), { converter: converter!, businessId, context });
}

/** Orders remembered for the contiguity check, per half (see `DecodeCsvOptions.maxTrackedOrders`). */
const TRACKED_ORDERS = 1_000_000;
const READ_CHUNK = 64 * 1024;

/**
 * A v2-JSON record takes about ten times the bytes of a v1 CSV one (every field is named in
 * every record), and splitting pays only past a few tens of thousands of records (each thread
 * costs ~0.1–0.3 s to start): a JSON file is split from this many times `halvesFromBytes`.
 */
export const JSON_HALVES_FACTOR = 8;

/** The file's size when it is large enough to split (`halvesFromBytes` × `factor`), else undefined. */
async function sizeToSplit(
  path: string,
  halvesFromBytes: number | undefined,
  factor: number,
): Promise<number | undefined> {
  if (halvesFromBytes === undefined) return undefined;
  const { size } = await stat(path);
  return size < halvesFromBytes * factor ? undefined : size;
}

async function jsonHalves(
  path: string,
  options: FileDecodeOptions,
): Promise<FileHalves | undefined> {
  const { businessId } = options;
  const size = await sizeToSplit(path, options.halvesFromBytes, JSON_HALVES_FACTOR);
  if (size === undefined) return undefined;
  const split = await findJsonSplit(path, size);
  if (!split) return undefined;
  const half = (part: HalfOfFile['part']): JsonHalf => ({
    format: 'v2-json',
    path,
    split,
    part,
    kind: options.kind.name,
    businessId,
  });
  // A v2 record stands alone: nothing (like a CSV order's rows) can join the halves.
  return { first: half('first'), second: half('second'), apart: () => true };
}

async function csvHalves(
  path: string,
  options: FileDecodeOptions,
  converter: LegacyConverter,
): Promise<FileHalves | undefined> {
  const { context, businessId } = options;
  const size = await sizeToSplit(path, options.halvesFromBytes, 1);
  if (size === undefined) return undefined;
  const layout = converter.withNames(context.names).csv;
  const split = await findCsvSplit(path, size, layout.groupBy);
  if (!split) return undefined;
  const { ignored, ...data } = context;
  const half = (part: HalfOfFile['part']): CsvHalf => ({
    format: 'v1-csv',
    path,
    split,
    part,
    kind: options.kind.name,
    businessId,
    context: { ...data, ignore: ignored !== undefined },
  });
  return {
    first: half('first'),
    second: half('second'),
    apart: (first, second) => !OrderRanges.reading(first).sharesKeyWith(second),
  };
}

/** What reads one half of a split file: its records, then its order table and the columns it ignored. */
export interface HalfReader {
  open(): AsyncIterable<Candidate>;
  readonly orders: OrderRanges;
  /** Columns beyond the layout, when the business's profile ignores them (listed in the answer). */
  readonly ignored: IgnoredFields | undefined;
}

/** One half of a split file (`FileHalves`), read as `csvHalf` or `jsonHalf` says. */
export function readHalf(half: HalfOfFile): HalfReader {
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
  async function* bytes(): AsyncGenerator<Uint8Array> {
    if (first) {
      yield* chunks(path, 0, split.at - 1);
      return;
    }
    yield* chunks(path, 0, split.headerEnd - 1);
    yield* chunks(path, split.at);
  }
  return {
    open: legacyCsvCandidates(bytes, {
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
