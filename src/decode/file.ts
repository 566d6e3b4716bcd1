import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { MalformedBody, PayloadTooLarge } from '../errors.js';
import type { Candidate } from './candidate.js';
import type { RecordKind } from '../records/kind.js';
import { LEGACY, type ConversionContext, type SenderTerms } from '../records/legacy/index.js';
import { parseJson } from './json.js';
import { jsonArrayCandidates } from './json-array.js';
import { convertLegacyJson, legacyCsvCandidates } from './legacy.js';

export type FileFormat = 'v1-csv' | 'v1-json' | 'v2-json';

/** The records part of a batch read from a local (spooled) file. */
export type FileRecords =
  | { mode: 'array'; records: unknown[]; senderTerms?: SenderTerms }
  | { mode: 'stream'; open: () => AsyncIterable<Candidate> };

export interface FileDecodeOptions {
  readonly kind: RecordKind;
  readonly format: FileFormat;
  readonly businessId: string;
  readonly context: ConversionContext;
  /** JSON has no streaming parser here: a JSON file larger than this is refused. */
  readonly maxJsonBytes: number;
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
  if (format === 'v1-csv')
    return {
      mode: 'stream',
      open: legacyCsvCandidates(() => createReadStream(path, { highWaterMark: 64 * 1024 }), {
        converter: converter!,
        businessId,
        context,
      }),
    };

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
