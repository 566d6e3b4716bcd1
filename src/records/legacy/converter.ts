import type { CsvLayout } from './csv-layout.js';
import type { KindName } from '../kind.js';
import type { IgnoredFields } from './ignored-fields.js';

/**
 * Legacy (v1) shapes are converted to v2 by declarative field mappings: each legacy field
 * names the v2 paths it fills. The same table drives the conversion, the CSV layout, and
 * the way back — from a v2 path that failed validation to the partner's own field — so an
 * error always points at what the partner sent.
 */
export type LegacyType = 'string' | 'number' | 'date';

export interface LegacyField {
  readonly legacy: string;
  readonly type: LegacyType;
  /**
   * v2 paths this field fills (relative to the record, or to the v2 line for line fields). Empty:
   * accepted, not forwarded. `shipAddresses[].shipmentId` fills every item, after the profile.
   */
  readonly to: readonly string[];
  /** A legacy number that v2 holds as a string (e.g. `LineNumber` → `line`). */
  readonly asString?: boolean;
}

export interface LegacyMapping {
  readonly kind: KindName;
  /** The JSON body's root array, e.g. `oOrders`. */
  readonly root: string;
  readonly header: readonly LegacyField[];
  readonly lines?: {
    readonly legacy: string;
    readonly v2: string;
    readonly fields: readonly LegacyField[];
    /** Header fields repeated on every v2 line, e.g. `OrdNumber` → `shipmentId`. */
    readonly fromHeader?: ReadonlyArray<{
      readonly legacy: string;
      readonly to: readonly string[];
    }>;
  };
  /** CSV: the header field whose value identifies one record across its rows. */
  readonly groupBy?: string;
  /**
   * v2 paths set to the time the batch was received (the legacy shape has no such date).
   * `lines[].dates.receipt` sets it on every line, like a profile path.
   */
  readonly receivedAt?: readonly string[];
  /** v2 values computed from mapped ones (docs/legacy-v1.md#mapping-legacy-field--v2-path); skipped when their inputs are missing. */
  readonly derive?: (record: Record<string, unknown>) => void;
  /** Paths `derive` sets: an error there is a consequence of an error on its inputs. */
  readonly derived?: readonly string[];
}

/** A problem found while converting, at a legacy path relative to the record. */
export interface LegacyProblem {
  readonly path: string;
  readonly message: string;
}

export interface ConversionContext {
  /** The business's onboarding profile for this kind: v2 path (`[]` = every item) → value. */
  readonly defaults?: Readonly<Record<string, unknown>>;
  /** ISO timestamp of receipt, for `receivedAt` paths. */
  readonly receivedAt: string;
  /**
   * Wire names of this business (spec name → the name it sends, e.g. `PlatformRef` → `ShopRef`),
   * from its onboarding profile. The spec name is then unknown for it. @default none
   */
  readonly names?: Readonly<Record<string, string>>;
  /**
   * Where fields beyond the shape are noted instead of refused (the profile's
   * `unknownFields: ignore`). Absent: refused, as the spec's shapes are exact.
   */
  readonly ignored?: IgnoredFields;
}

export interface LegacyConverter {
  readonly kind: KindName;
  readonly root: string;
  readonly csv: CsvLayout;
  readonly derived: ReadonlySet<string>;
  /**
   * v2 paths set to the time of receipt (`[]` = every item). They differ between two tries of
   * the same input, so message ids are computed without them (ids must be stable).
   */
  readonly receiptTimePaths: readonly string[];
  /** The v2 candidate record; conversion problems are pushed to `problems`. */
  toV2(legacy: unknown, context: ConversionContext, problems: LegacyProblem[]): unknown;
  /**
   * The legacy path (relative to the record) that fed `v2Path`; `''` for the record itself;
   * undefined when none did. `legacy` is the record as the partner sent it (from CSV, only its
   * shape: its lines and parts, no values): a v2 line index does not always tell which legacy
   * item it came from (work orders: one v2 line per finished good and per part), and a v2
   * object that is missing altogether is best blamed on the legacy field that is absent.
   */
  sourceOf(v2Path: string, legacy: unknown): string | undefined;
  /**
   * The same converter reading header fields under other wire names (spec name → wire name),
   * e.g. `{ PlatformRef: 'ShopRef' }`: JSON keys, CSV columns and error paths all use the wire
   * name. Made once per set of names (they come from configuration).
   */
  withNames(names: Readonly<Record<string, string>> | undefined): LegacyConverter;
}
