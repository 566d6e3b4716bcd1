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
import { convertLegacyJson, legacyCsvCandidates } from './legacy.js';
import { findCsvSplit, type CsvSplit } from './csv-split.js';
import { OrderRanges } from './order-ranges.js';

export type FileFormat = 'v1-csv' | 'v1-json' | 'v2-json';

/** The records part of a batch read from a local (spooled) file. */
export type FileRecords =
  | { mode: 'array'; records: unknown[]; senderTerms?: SenderTerms }
  | { mode: 'stream'; open: () => AsyncIterable<Candidate>; halves?: FileHalves };

/**
 * The same records as `open()`, in two halves that can be read at once, the second in another
 * thread (`pipeline/halves.ts`). Cut where no record spans the two (`csv-split.ts`).
 */
export interface FileHalves {
  /** The records of the first half, in order. */
  first(): AsyncIterable<Candidate>;
  /** Plain data from which `readSecondHalf`, in another thread, reads the rest. */
  readonly second: SecondHalf;
  /**
   * After both halves were read, with the order table of the second (`SecondHalfReader.orders`):
   * whether no order has rows in both. Only then are the halves' records, each folded and
   * checked apart, exactly those of one pass (an order in both halves is a contiguity error).
   */
  apart(secondOrders: Uint32Array): boolean;
}

/** Where the second half of a split CSV file is, and what reading it needs (structured-cloneable). */
export interface SecondHalf {
  readonly path: string;
  readonly split: CsvSplit;
  readonly kind: KindName;
  readonly businessId: string;
  /** The conversion context's data: `ignore` stands for an `IgnoredFields` of its own. */
  readonly context: Omit<ConversionContext, 'ignored'> & { readonly ignore: boolean };
}

export interface FileDecodeOptions {
  readonly kind: RecordKind;
  readonly format: FileFormat;
  readonly businessId: string;
  readonly context: ConversionContext;
  /** JSON has no streaming parser here: a JSON file larger than this is refused. */
  readonly maxJsonBytes: number;
  /**
   * A v1 CSV file of at least this many bytes is offered in two halves (`FileHalves`).
   * @default never
   */
  readonly halvesFromBytes?: number;
}

/**
 * Decodes a dropped file, already on local disk. v1 CSV and v2 JSON are streamed (read once, each
 * valid record spooled for the publish pass) so a 1 GB file stays in bounded memory; a v1 JSON
 * file is parsed whole, up to `maxJsonBytes`, because its errors are traced back through the
 * legacy document as sent.
 */
export async function decodeFile(path: string, options: FileDecodeOptions): Promise<FileRecords> {
  const { kind, format, businessId, context } = options;
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
    const read = () => createReadStream(path, { highWaterMark: 64 * 1024 });
    return { mode: 'stream', open: () => jsonArrayCandidates(read) };
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

async function csvHalves(
  path: string,
  options: FileDecodeOptions,
  converter: LegacyConverter,
): Promise<FileHalves | undefined> {
  const { halvesFromBytes, context, businessId } = options;
  if (halvesFromBytes === undefined) return undefined;
  const { size } = await stat(path);
  if (size < halvesFromBytes) return undefined;
  const layout = converter.withNames(context.names).csv;
  const split = await findCsvSplit(path, size, layout.groupBy);
  if (!split) return undefined;
  const orders = new OrderRanges(TRACKED_ORDERS);
  const { ignored, ...data } = context;
  return {
    first: legacyCsvCandidates(
      () => createReadStream(path, { start: 0, end: split.at - 1, highWaterMark: READ_CHUNK }),
      { converter, businessId, context, orders },
    ),
    second: {
      path,
      split,
      kind: options.kind.name,
      businessId,
      context: { ...data, ignore: ignored !== undefined },
    },
    apart: (secondOrders) => !orders.sharesKeyWith(secondOrders),
  };
}

/** What reads the second half of a split file: its records, and afterwards its order table. */
export interface SecondHalfReader {
  open(): AsyncIterable<Candidate>;
  readonly orders: OrderRanges;
}

/** The second half of a split CSV file (`FileHalves.second`): the header row, then the rows from the cut. */
export function readSecondHalf(half: SecondHalf): SecondHalfReader {
  const { path, split, kind, businessId } = half;
  const { ignore, ...data } = half.context;
  const context: ConversionContext = { ...data, ...(ignore && { ignored: new IgnoredFields() }) };
  const orders = new OrderRanges(TRACKED_ORDERS);
  async function* bytes(): AsyncGenerator<Uint8Array> {
    yield* createReadStream(path, {
      start: 0,
      end: split.headerEnd - 1,
      highWaterMark: READ_CHUNK,
    });
    yield* createReadStream(path, { start: split.at, highWaterMark: READ_CHUNK });
  }
  return {
    open: legacyCsvCandidates(bytes, {
      converter: LEGACY[kind]!,
      businessId,
      context,
      orders,
      lineAfterHeader: split.line,
    }),
    orders,
  };
}
