import type { LegacyConverter, LegacyProblem } from './converter.js';

/**
 * Puts a legacy batch's errors in the partner's own terms. The pipeline validates v2 records;
 * a partner who sent `oOrders` or a CSV file must be able to fix their input from the 400
 * alone, so each `<v2 path>: <message>` becomes `<legacy path or CSV line and column>: <message>`,
 * and a v2 field with no legacy source says that it comes from the onboarding profile.
 */
export interface SenderTerms {
  /** Errors found before validation (decoding, conversion) for record `index`, already located. */
  earlyErrors(index: number): readonly string[] | undefined;
  /** The record's final error list: its early errors, then its v2 errors located. */
  explain(index: number, v2Errors: readonly string[]): string[];
}

/** Where a legacy path of record `index` is: `oOrders[2].oOrderLines[0].Qty`, or `line 7, column oOrderLines_Qty`. */
export type Locate = (index: number, legacyPath: string) => string;

export function jsonLocator(root: string): Locate {
  return (index, path) =>
    `${root}[${index}]${path === '' ? '' : path.startsWith('[') ? path : `.${path}`}`;
}

export interface RecordTerms {
  readonly converter: LegacyConverter;
  readonly businessId: string;
  /** Where a legacy path of this record is. */
  readonly locate: (legacyPath: string) => string;
  /** Conversion and decoding problems of this record (legacy paths). */
  readonly problems: readonly LegacyProblem[] | undefined;
  /** The record as the partner sent it (legacy shape), for `converter.sourceOf`; asked only when needed. */
  readonly legacy: () => unknown;
}

/** The early (decoding, conversion) errors of one record, located. */
export function locatedProblems(
  terms: Pick<RecordTerms, 'locate' | 'problems'>,
): string[] | undefined {
  return terms.problems?.map((problem) => `${terms.locate(problem.path)}: ${problem.message}`);
}

/** One record's final error list: its early errors, then its v2 errors located in the sender's input. */
export function explainRecord(terms: RecordTerms, v2Errors: readonly string[]): string[] {
  const { converter, businessId, locate } = terms;
  const early = locatedProblems(terms) ?? [];
  const taken = new Set(early.map((error) => error.slice(0, error.indexOf(': '))));
  const out = [...early];
  const legacy = v2Errors.length > 0 ? terms.legacy() : undefined;
  for (const error of v2Errors) {
    const split = error.indexOf(': ');
    const path = error.slice(0, split);
    const message = error.slice(split + 2);
    // A derived value fails only because its inputs did; their own errors say what to fix.
    if (converter.derived.has(path) && v2Errors.length + early.length > 1) continue;
    const source = converter.sourceOf(path, legacy);
    if (source === undefined) {
      const pattern = path.replace(/\[\d+\]/g, '[]');
      out.push(
        `${path}: ${message} (no v1 field maps to it: it comes from the onboarding profile, "${pattern}" for ${converter.kind} of ${businessId})`,
      );
      continue;
    }
    const location = locate(source);
    if (taken.has(location)) continue; // already reported by the decoder or converter
    taken.add(location);
    out.push(`${location}: ${message}`);
  }
  return out;
}

/** Sender terms for a batch held in memory, by record index. */
export function senderTerms(options: {
  converter: LegacyConverter;
  businessId: string;
  locate: Locate;
  /** Conversion and decoding problems by record index (legacy paths). */
  problems: ReadonlyMap<number, readonly LegacyProblem[]>;
  /** Record `index` as the partner sent it (legacy shape), for `converter.sourceOf`. */
  legacyRecord: (index: number) => unknown;
}): SenderTerms {
  const { converter, businessId, locate, problems, legacyRecord } = options;
  const terms = (index: number): RecordTerms => ({
    converter,
    businessId,
    locate: (path) => locate(index, path),
    problems: problems.get(index),
    legacy: () => legacyRecord(index),
  });
  return {
    earlyErrors: (index) => (problems.has(index) ? locatedProblems(terms(index)) : undefined),
    explain: (index, v2Errors) => explainRecord(terms(index), v2Errors),
  };
}
