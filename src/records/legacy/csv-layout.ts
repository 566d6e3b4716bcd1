/** The types that describe a legacy kind's CSV layout (built by the record kinds) and a decoded CSV record (made by decode/csv.ts). */
export type CsvFieldType = 'string' | 'number' | 'date';
export interface CsvField {
  readonly name: string;
  readonly type: CsvFieldType;
}

/** How one legacy kind is laid out in CSV. Built by the record kinds; consumed here. */
export interface CsvLayout {
  /** Order-level (or product-level) fields; their columns are the plain names. */
  readonly header: readonly CsvField[];
  /** The line array, e.g. `{ name: 'oOrderLines', fields: [...] }` → columns `oOrderLines_<field>`. */
  readonly lines?: {
    readonly name: string;
    readonly fields: readonly CsvField[];
    /**
     * Second level (work orders): `FGParts` inside each line, columns `FGParts_<field>`, one row
     * per part; consecutive rows of an order with the same value in the `lines.groupBy` column form one line.
     */
    readonly parts?: {
      readonly name: string;
      readonly fields: readonly CsvField[];
      readonly groupBy: string;
    };
  };
  /** Header field whose value identifies an order; consecutive rows with the same value form one record. Absent: every row is its own record. */
  readonly groupBy?: string;
}

export interface CsvRecord {
  /** The record in the legacy JSON shape: numbers parsed, dates as given, empty string/date cells absent. */
  readonly value: Record<string, unknown>;
  /** Problems found while decoding this record; paths are legacy JSON paths relative to the record, e.g. `oOrderLines[1].Qty`. */
  readonly errors: ReadonlyArray<{ readonly path: string; readonly message: string }>;
  /**
   * The file line (1-based; the header is usually line 1) on which each of the record's rows
   * starts, in file order. One row per line item, so `rows[i]` is the row of `<lines>[i]`; for
   * work orders one row per part, so the rows of `FinishedGoods[i]` begin at `rows[lineStarts[i]]`.
   */
  readonly rows: readonly number[];
  /** Two-level layouts only: index in `rows` of the first row of each line (finished good). */
  readonly lineStarts?: readonly number[];
}
