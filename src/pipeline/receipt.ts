import type { Environment } from '../config/schema.js';
import type { ProblemDetails } from '../errors.js';
import type { BulkResponse } from './batch.js';
import type { ReceiptOutcome } from '../vocabulary.js';

/**
 * What a dropped file gets back, written next to its final place as `<name>.receipt.json`:
 * exactly what the HTTP API would have answered (the bulk response, or the problem details
 * with every error — for CSV with line and column), plus the facts of the file.
 */
export interface Receipt {
  /**
   * `accepted`: every record published and confirmed. `validated`: the sandbox's answer — every
   * record passed validation and, as the sandbox creates nothing, nothing was published.
   * `rejected`: nothing published. `duplicate`: these bytes were accepted before. `dead`: given up
   * on after too many tries; nothing more is published, and what earlier tries got confirmed is
   * in its problem (`publishedRecords`, `messageIds`).
   */
  outcome: ReceiptOutcome;
  /** The environment that wrote the receipt: a sandbox receipt never reads like a production one. */
  environment: Environment;
  /** The `202` bulk response (accepted, duplicate) or the problem details (rejected, dead). */
  response: BulkResponse | ProblemDetails;
  pipeline: string;
  businessId: string;
  kind: string;
  format: string;
  file: { name: string; size: number; sha256: string; source: string };
  /** When the worker took the file, and when the outcome was known (ISO 8601, UTC). */
  receivedAt: string;
  processedAt: string;
  /** 1 for the first try; more after retries and reprocessing. */
  attempt: number;
  /** For a duplicate: the receipt of the accepted copy. */
  duplicateOf?: { file: string; processedAt: string; receipt: string };
}

export const RECEIPT_SUFFIX = '.receipt.json';

export function receiptName(inputName: string): string {
  return `${inputName}${RECEIPT_SUFFIX}`;
}

export function serializeReceipt(receipt: Receipt): string {
  return `${JSON.stringify(receipt, null, 2)}\n`;
}
