import type { LegacyConverter, LegacyProblem } from './mapping.js';

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
  return (index, path) => `${root}[${index}]${path === '' ? '' : path.startsWith('[') ? path : `.${path}`}`;
}

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
  const located = (index: number): string[] | undefined =>
    problems.get(index)?.map((problem) => `${locate(index, problem.path)}: ${problem.message}`);

  return {
    earlyErrors: located,
    explain(index, v2Errors) {
      const early = located(index) ?? [];
      const taken = new Set(early.map((error) => error.slice(0, error.indexOf(': '))));
      const out = [...early];
      const legacy = v2Errors.length > 0 ? legacyRecord(index) : undefined;
      for (const error of v2Errors) {
        const split = error.indexOf(': ');
        const path = error.slice(0, split);
        const message = error.slice(split + 2);
        // A derived value fails only because its inputs did; their own errors say what to fix.
        if (converter.derived.has(path) && v2Errors.length + early.length > 1) continue;
        const source = converter.sourceOf(path, legacy);
        if (source === undefined) {
          const pattern = path.replace(/\[\d+\]/g, '[]');
          out.push(`${path}: ${message} (no v1 field maps to it: it comes from the onboarding profile, "${pattern}" for ${converter.kind} of ${businessId})`);
          continue;
        }
        const location = locate(index, source);
        if (taken.has(location)) continue; // already reported by the decoder or converter
        taken.add(location);
        out.push(`${location}: ${message}`);
      }
      return out;
    },
  };
}
