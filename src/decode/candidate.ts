/** What a decoder yields for a streamed batch: one record at a time, with its way back to the sender's input. */
/** One decoded record of a streamed batch, with its errors' way back to the sender's input. */
export interface Candidate {
  readonly record: unknown;
  /** Problems found before validation (decoding, conversion), already in the sender's terms. */
  readonly early?: readonly string[];
  /** The record's final error list in the sender's terms, given its v2 errors. */
  readonly explain?: (v2Errors: readonly string[]) => string[];
  /** The input line the record starts on (CSV: its first row), for lineage. */
  readonly line?: number;
}
