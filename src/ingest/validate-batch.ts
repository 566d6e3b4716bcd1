import {
  Interrupted,
  MalformedBody,
  PayloadTooLarge,
  ValidationFailed,
  type RecordErrors,
} from '../errors.js';
import { validateRecord, type ValidationResult } from '../records/validate.js';
import type { ArrayBatch, Batch, StreamBatch } from './batch.js';

/** A streamed batch lists at most this many failing records (and says how many failed). */
export const MAX_LISTED_FAILURES = 1000;

/**
 * The outcome of the validation pass. Shared by `ingest()` (which then publishes) and the
 * offline `validate` command (which only prints), so both word every failure the same way.
 */
export type Verdict =
  | {
      readonly ok: true;
      readonly total: number /** Array batches only: the validated records, in order. */;
      readonly accepted?: Record<string, unknown>[];
    }
  | {
      readonly ok: false;
      readonly total: number;
      readonly failing: number;
      readonly error: ValidationFailed;
    };

/**
 * Told each valid record of a streamed batch, in order, with its input line, while no record has
 * failed. A promise it returns is awaited before the next record (back-pressure).
 */
export type OnValid = (
  record: Record<string, unknown>,
  line: number | undefined,
) => Promise<void> | undefined;

/** What a valid record must pass besides its kind's rules (that it can be routed); its errors, or none. */
export type RecordCheck = (record: Record<string, unknown>) => string[] | undefined;

/**
 * Validates every record of a batch (all-or-nothing). Resolves with the verdict; throws
 * `MalformedBody` (no records) or `PayloadTooLarge` (over `maxRecords`), exactly as the API answers.
 */
export async function validateBatch(
  batch: Batch,
  onValid?: OnValid,
  check?: RecordCheck,
): Promise<Verdict> {
  return batch.mode === 'array'
    ? validateArray(batch, check)
    : validateStream(batch, onValid, check);
}

/** What the validation pass of a streamed batch reads of it (a worker thread has no more: `halves.ts`). */
export type StreamToValidate = Pick<
  StreamBatch,
  'mode' | 'kind' | 'businessId' | 'maxRecords' | 'open' | 'signal' | 'resumeAfter'
>;

/** The record's validation, and then `check`'s when the record is valid. */
function validate(
  batch: Pick<Batch, 'kind' | 'businessId'>,
  input: unknown,
  check: RecordCheck | undefined,
): ValidationResult {
  const result = validateRecord(batch.kind, input, batch.businessId);
  if (!result.ok || !check) return result;
  const errors = check(result.record);
  return errors ? { ok: false, errors } : result;
}

export function checkCount(batch: Pick<Batch, 'mode' | 'maxRecords'>, count: number): void {
  if (count === 0) throw new MalformedBody({ detail: 'The batch holds no records.' });
  if (batch.maxRecords !== undefined && count > batch.maxRecords) {
    throw new PayloadTooLarge({
      detail: `The batch holds ${count}${batch.mode === 'array' ? '' : ' or more'} records; the limit is ${batch.maxRecords} records per batch. Split it into smaller batches.`,
    });
  }
}

function rejected(failures: RecordErrors[], failing: number, total: number): Verdict {
  const listed = failing > failures.length ? `; the first ${failures.length} are listed` : '';
  const error = new ValidationFailed({
    detail: `${failing} of ${total} record(s) failed validation${listed}; no record was accepted.`,
    errors: failures,
  });
  return { ok: false, total, failing, error };
}

function validateArray(batch: ArrayBatch, check: RecordCheck | undefined): Verdict {
  const { records, senderTerms } = batch;
  checkCount(batch, records.length);
  const accepted: Record<string, unknown>[] = new Array(records.length);
  const failures: RecordErrors[] = [];
  for (let index = 0; index < records.length; index++) {
    const result = validate(batch, records[index], check);
    if (senderTerms && (!result.ok || senderTerms.earlyErrors(index))) {
      failures.push({ index, errors: senderTerms.explain(index, result.ok ? [] : result.errors) });
    } else if (result.ok) accepted[index] = result.record;
    else failures.push({ index, errors: result.errors });
  }
  if (failures.length > 0) return rejected(failures, failures.length, records.length);
  return { ok: true, total: records.length, accepted };
}

/**
 * Reads the stream once (or until `batch.signal` aborts it); nothing is kept but the errors. `onValid` sees each valid record while
 * no record has failed yet (after a failure nothing will be published, so nothing more is needed).
 */
export async function validateStream(
  batch: StreamToValidate,
  onValid: OnValid | undefined,
  check: RecordCheck | undefined,
): Promise<Verdict> {
  const failures: RecordErrors[] = [];
  let failing = 0;
  let total = 0;
  for await (const candidate of batch.open()) {
    const result = validate(batch, candidate.record, check);
    if (result.ok && !candidate.early) {
      if (failing === 0) {
        const pending = onValid?.(result.record, candidate.line);
        if (pending) await pending;
      }
    } else {
      failing += 1;
      if (failures.length < MAX_LISTED_FAILURES) {
        const v2Errors = result.ok ? [] : result.errors;
        failures.push({
          index: total,
          errors: candidate.explain ? candidate.explain(v2Errors) : v2Errors,
        });
      }
    }
    total += 1;
    // A stop just ends this pass: nothing is published yet, so nothing more than an earlier try's is confirmed.
    if (total % 1000 === 0 && batch.signal?.aborted) throw new Interrupted(batch.resumeAfter ?? 0);
    if (batch.maxRecords !== undefined && total > batch.maxRecords) checkCount(batch, total);
  }
  checkCount(batch, total);
  if (failing > 0) return rejected(failures, failing, total);
  return { ok: true, total };
}
