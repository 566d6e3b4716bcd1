import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { MalformedBody, PayloadTooLarge } from '../errors.js';
import type { Candidate, StreamPass } from './candidate.js';
import type { RecordKind } from '../records/kind.js';
import { LEGACY, type ConversionContext, type SenderTerms } from '../records/legacy/index.js';
import { parseJson, parseJsonArray } from './json.js';
import { convertLegacyJson, legacyCsvCandidates } from './legacy.js';

export type FileFormat = 'v1-csv' | 'v1-json' | 'v2-json';

/** The records part of a batch read from a local (spooled) file. */
export type FileRecords =
  | { mode: 'array'; records: unknown[]; senderTerms?: SenderTerms }
  | { mode: 'stream'; open: (pass: StreamPass) => AsyncIterable<Candidate> };

export interface FileDecodeOptions {
  readonly kind: RecordKind;
  readonly format: FileFormat;
  readonly businessId: string;
  readonly context: ConversionContext;
  /** JSON has no streaming parser here: a JSON file larger than this is refused. */
  readonly maxJsonBytes: number;
}

/**
 * Decodes a dropped file, already on local disk. CSV is streamed (read twice: validate, then
 * publish) so a 1 GB file stays in bounded memory; JSON is parsed whole, up to `maxJsonBytes`.
 */
export async function decodeFile(path: string, options: FileDecodeOptions): Promise<FileRecords> {
  const { kind, format, businessId, context } = options;
  const converter = LEGACY[kind.name];
  if (format !== 'v2-json' && !converter)
    throw new MalformedBody({ detail: `There is no v1 shape for ${kind.name}.` });
  if (format === 'v1-csv')
    return {
      mode: 'stream',
      open: legacyCsvCandidates(() => createReadStream(path, { highWaterMark: 64 * 1024 }), {
        converter: converter!,
        businessId,
        context,
      }),
    };

  const { size } = await stat(path);
  if (size > options.maxJsonBytes) {
    throw new PayloadTooLarge({
      detail: `The JSON file has ${size} bytes; JSON files are limited to ${options.maxJsonBytes} bytes (CSV files are not).`,
    });
  }
  const bytes = await readFile(path);
  if (format === 'v2-json') return { mode: 'array', records: parseJsonArray(bytes) };
  return convertLegacyJson(parseJson(bytes), { converter: converter!, businessId, context });
}
