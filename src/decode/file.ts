import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { MalformedBody, PayloadTooLarge } from '../errors.js';
import type { Candidate } from './candidate.js';
import type { RecordKind } from '../records/kind.js';
import {
  LEGACY,
  type ConversionContext,
  type LegacyConverter,
  type SenderTerms,
} from '../records/legacy/index.js';
import { parseJson } from './json.js';
import { jsonArrayCandidates } from './json-array.js';
import { findJsonSplit } from './json-split.js';
import { convertLegacyJson, legacyCsvCandidates } from './legacy.js';
import { findCsvSplit } from './csv-split.js';
import { OrderRanges } from './order-ranges.js';
import { decodeX12, type X12DecodeOptions } from './x12/index.js';
import { mappedCandidates, type MappedFormat } from './mapped.js';
import {
  READ_CHUNK,
  type CsvHalf,
  type FileHalves,
  type HalfOfFile,
  type JsonHalf,
  type MappedCsvHalf,
} from './file-halves.js';

export {
  readHalf,
  type CsvHalf,
  type FileHalves,
  type HalfOfFile,
  type HalfReader,
  type JsonHalf,
  type MappedCsvHalf,
} from './file-halves.js';

export type FileFormat = 'v1-csv' | 'v1-json' | 'v2-json' | MappedFormat['format'] | 'x12';

/** The records part of a batch read from a local (spooled) file. */
export type FileRecords =
  | { mode: 'array'; records: unknown[]; senderTerms?: SenderTerms }
  | { mode: 'stream'; open: () => AsyncIterable<Candidate>; halves?: FileHalves };

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
  /** `csv` and `json`: the pipeline's compiled mapping and layout. */
  readonly mapped?: MappedFormat;
  /** X12 only: the interchange accepted before under the same sender and ISA13 (a duplicate). */
  readonly earlierInterchange?: X12DecodeOptions['earlier'];
}

/**
 * Decodes a dropped file, already on local disk, with its format's decoder (`DECODERS`). v1 CSV,
 * v2 JSON and mapped CSV are streamed (read once, each valid record spooled for the publish
 * pass) so a 1 GB file stays in bounded memory; a v1 JSON file is parsed whole, up to
 * `maxJsonBytes`, because its errors are traced back through the legacy document as sent (a
 * mapped JSON file too: its records are found by a JSONata path into the whole document).
 */
export function decodeFile(path: string, options: FileDecodeOptions): Promise<FileRecords> {
  return DECODERS[options.format](path, options);
}

type Decoder = (path: string, options: FileDecodeOptions) => Promise<FileRecords>;

/** Every file format and its decoder: adding a format is one more row. */
const DECODERS: Readonly<Record<FileFormat, Decoder>> = {
  'v1-csv': async (path, options) => {
    const { businessId, context } = options;
    const converter = legacyConverter(options);
    const open = legacyCsvCandidates(() => createReadStream(path, { highWaterMark: 64 * 1024 }), {
      converter,
      businessId,
      context,
    });
    const halves = await csvHalves(path, options, converter);
    return { mode: 'stream', open, ...(halves && { halves }) };
  },
  'v1-json': async (path, options) => {
    const { businessId, context } = options;
    const converter = legacyConverter(options);
    const { size } = await stat(path);
    if (size > options.maxJsonBytes) {
      throw new PayloadTooLarge({
        detail: `The v1 JSON file has ${size} bytes; v1 JSON files are limited to ${options.maxJsonBytes} bytes (v1 CSV and v2 JSON files are not).`,
      });
    }
    const bytes = await readFile(path);
    return convertLegacyJson(parseJson(bytes), { converter, businessId, context });
  },
  'v2-json': async (path, options) => {
    const read = () => createReadStream(path, { highWaterMark: READ_CHUNK });
    const halves = await jsonHalves(path, options);
    return { mode: 'stream', open: () => jsonArrayCandidates(read), ...(halves && { halves }) };
  },
  csv: mappedFile,
  json: mappedFile,
  x12: async (path, options) => {
    const { kind, businessId, context } = options;
    return decodeX12(path, {
      kind: kind.name,
      businessId,
      ...(context.defaults && { defaults: context.defaults }),
      maxBytes: options.maxJsonBytes,
      ...(options.earlierInterchange && { earlier: options.earlierInterchange }),
    });
  },
};

function legacyConverter({ kind }: FileDecodeOptions): LegacyConverter {
  const converter = LEGACY[kind.name];
  if (!converter) throw new MalformedBody({ detail: `There is no v1 shape for ${kind.name}.` });
  return converter;
}

/** A partner's own CSV or JSON layout through its pipeline's mapping (`mapped.ts`). */
async function mappedFile(path: string, options: FileDecodeOptions): Promise<FileRecords> {
  const { mapped, kind, businessId, context } = options;
  if (!mapped) throw new Error(`format ${options.format} needs its compiled mapping`);
  const open = mappedCandidates(path, {
    mapped,
    maxJsonBytes: options.maxJsonBytes,
    settings: {
      kind: kind.name,
      businessIdPath: kind.businessIdPath,
      businessId,
      defaults: context.defaults,
    },
  });
  const halves = mapped.format === 'csv' ? await mappedCsvHalves(path, options, mapped) : undefined;
  return { mode: 'stream', open, ...(halves && { halves }) };
}

/**
 * A large mapped CSV in two halves, like a v1 CSV: only in the layout `findCsvSplit` reads
 * (UTF-8, commas, `"` quoting, a header row first), else in one pass.
 */
async function mappedCsvHalves(
  path: string,
  options: FileDecodeOptions,
  mapped: MappedFormat & { readonly format: 'csv' },
): Promise<FileHalves | undefined> {
  const { csv } = mapped;
  const plain =
    csv.encoding === 'utf-8' &&
    csv.delimiter === ',' &&
    csv.quote === '"' &&
    csv.escape === '"' &&
    csv.skipLines === 0 &&
    csv.header === true;
  const size = plain ? await sizeToSplit(path, options.halvesFromBytes, 1) : undefined;
  if (size === undefined) return undefined;
  const split = await findCsvSplit(path, size, mapped.groupBy);
  if (!split) return undefined;
  const half = (part: HalfOfFile['part']): MappedCsvHalf => ({
    format: 'csv',
    path,
    split,
    part,
    kind: options.kind.name,
    businessId: options.businessId,
    csv,
    mapping: mapped.mapping.source,
    groupBy: mapped.groupBy,
    defaults: options.context.defaults,
    businessIdPath: options.kind.businessIdPath,
  });
  return {
    first: half('first'),
    second: half('second'),
    apart: (first, second) => !OrderRanges.reading(first).sharesKeyWith(second),
  };
}

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
