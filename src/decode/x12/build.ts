import { applyDefaults } from '../../records/legacy/mapping.js';
import { type Plain, setPath } from '../../records/legacy/paths.js';

import type { Segment, TransactionSet } from './envelope.js';
import { type Carrier, located, SourceMap } from './partner-terms.js';

/**
 * What a transaction-set mapping makes: the v2 record (the pipeline's business id and the
 * onboarding profile's values in it), its way back to the set, and the problems found while
 * mapping (a quantity that is no number, a missing mandatory segment), already located.
 */
export interface Mapped {
  readonly record: Plain;
  readonly sources: SourceMap;
  readonly problems: string[];
}

/** Builds one record from one transaction set, remembering where each value came from. */
export class RecordBuilder {
  readonly record: Plain = {};
  readonly sources: SourceMap;
  readonly problems: string[] = [];
  constructor(
    readonly set: TransactionSet,
    carriers: readonly Carrier[],
  ) {
    this.sources = new SourceMap(set.control, carriers);
  }

  /** Element `n` of `segment`, trimmed; undefined when absent or empty. */
  element(segment: Segment, n: number): string | undefined {
    const value = segment.elements[n]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  /** Sets `path` (`a.b`, arrays built by the caller) to element `n` of `segment` when present. */
  text(path: string, segment: Segment, n: number): string | undefined {
    const value = this.element(segment, n);
    if (value !== undefined) this.put(path, value, segment, n);
    return value;
  }

  /** An X12 numeric (`N`, `R`) element as a number; a problem when it is not one. */
  number(path: string, segment: Segment, n: number): void {
    const value = this.element(segment, n);
    if (value === undefined) return;
    if (!/^-?(\d+\.?\d*|\.\d+)$/.test(value)) {
      this.problem(segment, n, `Expected a number, received "${value.slice(0, 40)}"`);
      return;
    }
    this.put(path, Number(value), segment, n);
  }

  /** A `CCYYMMDD` date (element `n`) and an optional `HHMM[SS]` time (element `time`), as UTC. */
  date(path: string, segment: Segment, n: number, time?: number): void {
    const day = this.element(segment, n);
    if (day === undefined) return;
    const clock = time === undefined ? undefined : this.element(segment, time);
    const d = /^(\d{4})(\d{2})(\d{2})$/.exec(day);
    const t = clock === undefined ? ['', '00', '00', '00'] : /^(\d{2})(\d{2})(\d{2})?/.exec(clock);
    if (!d) {
      this.problem(segment, n, `Expected a date as CCYYMMDD, received "${day.slice(0, 20)}"`);
      return;
    }
    if (!t) {
      this.problem(segment, time ?? n, `Expected a time as HHMM, received "${clock}"`);
      return;
    }
    const iso = `${d[1]}-${d[2]}-${d[3]}T${t[1]}:${t[2]}:${t[3] ?? '00'}Z`;
    if (
      Number.isNaN(Date.parse(iso)) ||
      new Date(iso).toISOString().slice(0, 10) !== iso.slice(0, 10)
    ) {
      this.problem(segment, n, `"${day}" is not a calendar date`);
      return;
    }
    this.put(path, iso, segment, n);
  }

  put(path: string, value: unknown, segment: Segment, n?: number): void {
    setIn(this.record, path, value);
    this.sources.add(path, { segment, ...(n !== undefined && { element: n }) });
  }

  /** Marks a made object (an address, a line) as coming from `segment` as a whole. */
  from(path: string, segment: Segment): void {
    this.sources.add(path, { segment });
  }

  problem(segment: Segment, element: number | undefined, message: string): void {
    const place = { id: segment.id, position: segment.position };
    this.problems.push(
      located(
        { set: this.set.control, segment: place, ...(element !== undefined && { element }) },
        message,
      ),
    );
  }

  /** A mandatory segment the set lacks: placed right after ST, where a 997 expects it. */
  missing(id: string, shown: string): void {
    this.problems.push(
      located(
        { set: this.set.control, segment: { id, position: 2 } },
        `mandatory segment ${shown} missing`,
      ),
    );
  }

  /** The business id from the pipeline, never from the partner; the profile fills the rest. */
  finish(
    businessIdPath: string,
    businessId: string,
    defaults?: Readonly<Record<string, unknown>>,
    complete?: (record: Plain) => void,
  ): Mapped {
    setPath(this.record, businessIdPath, businessId);
    if (defaults) applyDefaults(this.record, defaults);
    complete?.(this.record);
    return { record: this.record, sources: this.sources, problems: this.problems };
  }
}

/** Sets `a.b[2].c`: `[n]` steps make arrays, other steps objects. */
function setIn(target: Plain, path: string, value: unknown): void {
  const steps = path
    .split(/\.|(?=\[)/)
    .map((step) => (step.startsWith('[') ? Number(step.slice(1, -1)) : step));
  let node: Record<string | number, unknown> = target;
  for (let i = 0; i < steps.length - 1; i++) {
    const step = steps[i]!;
    let next = node[step];
    if (typeof next !== 'object' || next === null)
      node[step] = next = typeof steps[i + 1] === 'number' ? [] : {};
    node = next as Record<string | number, unknown>;
  }
  node[steps.at(-1)!] = value;
}
