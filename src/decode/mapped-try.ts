/**
 * A mapped file tried before it goes live (`mapping try`, the portal's pipeline page): decoded
 * and validated exactly as a drop would, nothing published. Gives every record the mapping made
 * (after the onboarding profile) and every failure in the partner's terms.
 */
import type { RecordKind } from '../records/kind.js';
import { conversionContext, type ProfilesSource } from '../records/legacy/index.js';
import { validateRecord } from '../records/validate.js';
import { decodeFile } from './file.js';
import type { MappedFormat } from './mapped.js';

export interface TriedFile {
  /** Every record the mapping made, valid or not, in file order, as it would be validated. */
  readonly records: readonly unknown[];
  /** The failing records (index in `records`' order, counting refused groups too) and their errors. */
  readonly errors: ReadonlyArray<{ readonly index: number; readonly errors: readonly string[] }>;
}

export interface TryOptions {
  readonly kind: RecordKind;
  readonly businessId: string;
  readonly mapped: MappedFormat;
  readonly onboarding: ProfilesSource;
  readonly maxJsonBytes: number;
  /** Records kept for the answer at most (the errors are all counted). @default 1000 */
  readonly maxRecords?: number;
}

/** Throws `MalformedBody` (or `PayloadTooLarge`) for a file refused whole, as a drop would. */
export async function tryMappedFile(path: string, options: TryOptions): Promise<TriedFile> {
  const { kind, businessId, mapped } = options;
  const context = conversionContext(
    options.onboarding,
    businessId,
    kind.name,
    new Date().toISOString(),
  );
  const decoded = await decodeFile(path, {
    kind,
    format: mapped.format,
    businessId,
    context,
    maxJsonBytes: options.maxJsonBytes,
    mapped,
  });
  if (decoded.mode !== 'stream') throw new Error('a mapped file is always streamed');
  const records: unknown[] = [];
  const errors: { index: number; errors: readonly string[] }[] = [];
  const max = options.maxRecords ?? 1000;
  let index = 0;
  for await (const candidate of decoded.open()) {
    const result = validateRecord(kind, candidate.record, businessId);
    if (!result.ok || candidate.early) {
      const v2Errors = result.ok ? [] : result.errors;
      errors.push({ index, errors: candidate.explain ? candidate.explain(v2Errors) : v2Errors });
    }
    if (records.length < max && candidate.record !== undefined) records.push(candidate.record);
    index += 1;
  }
  return { records, errors };
}
