import path from 'node:path';
import { decodeFile, type FileFormat, type FileRecords } from '../decode/file.js';
import { isIngestError, toProblem, type ProblemDetails } from '../errors.js';
import { createLogger } from '../log.js';
import { compileRoutingKey, routableCheck } from '../ingest/route.js';
import { validateBatch } from '../ingest/validate-batch.js';
import type { RecordKind } from '../records/kind.js';
import { conversionContext, LEGACY, type OnboardingProfiles } from '../records/legacy/index.js';
import { UsageError } from './help.js';

export interface ValidateFileOptions {
  readonly file: string;
  readonly kind: RecordKind;
  readonly format: FileFormat;
  /** Undefined: the business id of the first record. */
  readonly businessId?: string;
  readonly onboarding: OnboardingProfiles;
  /** `broker.routingKey`: a record whose key AMQP cannot carry is invalid, as in the service. @default not checked */
  readonly routingKey?: string;
}

export type FileVerdict =
  | { readonly ok: true; readonly businessId: string; readonly records: number }
  | {
      readonly ok: false;
      readonly businessId?: string /** What the API answers, and a drop's receipt holds, for this input. */;
      readonly problem: ProblemDetails;
    };

/** The drop runner's bound: a JSON file is parsed whole. */
const MAX_JSON_BYTES = 256 * 1024 * 1024;

/** Nobody reads the validation pass's log lines here: the verdict is the output. */
const SILENT = createLogger({ level: 'silent' });

/**
 * Decodes and validates a file with the code a file drop runs (decodeFile, then the pipeline's
 * validation pass) — everything but publishing. Throws only when the file cannot be read.
 */
export async function validateFile(options: ValidateFileOptions): Promise<FileVerdict> {
  const { file, kind } = options;
  // The receipt's `instance` is the file name, as the drop runner writes it.
  const invalid = (error: unknown, businessId?: string): FileVerdict => {
    if (isIngestError(error) && error.status < 500)
      return { ok: false, businessId, problem: toProblem(error, path.basename(file)).problem };
    throw error;
  };
  let businessId = options.businessId;
  if (businessId === undefined) {
    try {
      businessId = await firstBusinessId(options);
    } catch (error) {
      return invalid(error);
    }
  }
  try {
    const records = await decode(options, businessId);
    const verdict = await validateBatch(
      {
        kind,
        businessId,
        ...records,
        correlationId: 'validate',
        source: { type: 'file', name: file },
        log: SILENT,
        volatilePaths: options.format === 'v2-json' ? [] : LEGACY[kind.name]?.receiptTimePaths,
      },
      undefined,
      options.routingKey === undefined
        ? undefined
        : routableCheck(compileRoutingKey(options.routingKey), kind.name, businessId),
    );
    return verdict.ok
      ? { ok: true, businessId, records: verdict.total }
      : invalid(verdict.error, businessId);
  } catch (error) {
    return invalid(error, businessId);
  }
}

function decode(options: ValidateFileOptions, businessId: string): Promise<FileRecords> {
  return decodeFile(options.file, {
    kind: options.kind,
    format: options.format,
    businessId,
    context: conversionContext(
      options.onboarding,
      businessId,
      options.kind.name,
      new Date().toISOString(),
    ),
    maxJsonBytes: MAX_JSON_BYTES,
  });
}

/** The business id the first record carries (after conversion, for v1); '' for an empty file. */
async function firstBusinessId(options: ValidateFileOptions): Promise<string> {
  const records = await decode(options, '');
  let first: unknown;
  let empty = true;
  if (records.mode === 'array') {
    empty = records.records.length === 0;
    first = records.records[0];
  } else {
    for await (const candidate of records.open()) {
      empty = false;
      first = candidate.record;
      break;
    }
  }
  if (empty) return '';
  let value: unknown = first;
  for (const key of options.kind.businessIdPath)
    value =
      typeof value === 'object' && value !== null
        ? (value as Record<string, unknown>)[key]
        : undefined;
  if (typeof value !== 'string' || value === '')
    throw new UsageError(
      `the first record names no business id (${options.kind.businessIdPath.join('.')}): pass --business <id>`,
      'validate',
    );
  return value;
}
