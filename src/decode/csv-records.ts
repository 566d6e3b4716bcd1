/**
 * Folding CSV rows into legacy records (see `csv.ts`): order-level cells once per order, one
 * line item per row, for work orders one part per row grouped into finished goods. Everything
 * a row can get wrong here is a record error with a legacy path, never an exception, except a
 * ragged row, which means the file itself is broken.
 */
import { MalformedBody } from '../errors.js';
import type { CsvField, CsvLayout, CsvRecord } from '../records/legacy/csv-layout.js';
import { parseNumber } from './csv-number.js';
import type { OrderRanges } from './order-ranges.js';

/** A layout level resolved against the file: the cell index, name and type of each field. */
interface Level {
  readonly names: readonly string[];
  readonly at: readonly number[];
  readonly numeric: readonly boolean[];
}

function level(
  fields: readonly CsvField[],
  prefix: string,
  found: ReadonlyMap<string, number>,
): Level {
  return {
    names: fields.map((f) => f.name),
    at: fields.map((f) => found.get(prefix + f.name)!),
    numeric: fields.map((f) => f.type === 'number'),
  };
}

type Errors = Array<{ path: string; message: string }>;

/**
 * Folds rows into records. `add` returns the previous record once a row starts a new one;
 * `finish` returns the last. All per-row work is index arithmetic on the row's cells.
 */
export class RecordBuilder {
  private readonly width: number;
  private readonly header: Level;
  private readonly lines: (Level & { name: string }) | undefined;
  private readonly parts: (Level & { name: string }) | undefined;
  private readonly groupAt: number;
  private readonly groupName: string;
  private readonly partGroupAt: number;
  private readonly partGroupName: string;
  private readonly seen: OrderRanges;

  // The record being built.
  private key = '';
  private first: string[] = [];
  private rows: number[] = [];
  private value: Record<string, unknown> = {};
  private errors: Errors = [];
  private items: Array<Record<string, unknown>> = [];
  /** Paths already reported as differing between rows, so each is reported once per record. */
  private differing: Set<string> | undefined;
  private open = false;
  // Work orders: the line (finished good) being built.
  private lineKey = '';
  private lineFirst: string[] = [];
  private lineStarts: number[] = [];
  private lineSeen = new Map<string, [number, number]>();
  /** The current line's entry in `lineSeen`; undefined when its key is empty or it reappeared. */
  private lineRange: [number, number] | undefined;

  /** `width`: cells in the header row (more than `found` holds when columns are ignored). */
  constructor(
    layout: CsvLayout,
    found: ReadonlyMap<string, number>,
    seen: OrderRanges,
    width = found.size,
  ) {
    this.width = width;
    this.header = level(layout.header, '', found);
    this.groupName = layout.groupBy ?? '';
    this.groupAt = layout.groupBy === undefined ? -1 : required(found, layout.groupBy, 'groupBy');
    const lines = layout.lines;
    this.lines = lines && { name: lines.name, ...level(lines.fields, `${lines.name}_`, found) };
    const parts = lines?.parts;
    this.parts = parts && { name: parts.name, ...level(parts.fields, `${parts.name}_`, found) };
    this.partGroupName = parts?.groupBy ?? '';
    this.partGroupAt = parts
      ? required(found, `${lines!.name}_${parts.groupBy}`, 'lines.parts.groupBy')
      : -1;
    this.seen = seen;
  }

  add(cells: string[], line: number): CsvRecord | undefined {
    if (cells.length !== this.width) {
      throw new MalformedBody({
        detail: `line ${line} has ${cells.length} cells; the header has ${this.width}`,
      });
    }
    const key = this.groupAt === -1 ? '' : cells[this.groupAt]!;
    if (this.open && key !== '' && key === this.key) {
      this.sameValues(this.header, this.first, cells, line, '', 'order');
      this.addLine(cells, line);
      return undefined;
    }
    const done = this.finish();
    this.start(cells, line, key);
    return done;
  }

  finish(): CsvRecord | undefined {
    if (!this.open) return undefined;
    this.open = false;
    const { rows } = this;
    if (this.key !== '') this.seen.remember(this.key, rows[0]!, rows[rows.length - 1]!);
    if (this.lines) this.value[this.lines.name] = this.items;
    return this.parts
      ? { value: this.value, errors: this.errors, rows, lineStarts: this.lineStarts }
      : { value: this.value, errors: this.errors, rows };
  }

  private start(cells: string[], line: number, key: string): void {
    this.open = true;
    this.key = key;
    this.first = cells;
    this.rows = [];
    this.value = {};
    this.errors = [];
    this.items = [];
    this.differing = undefined;
    this.lineStarts = [];
    if (this.lineSeen.size > 0) this.lineSeen = new Map();
    this.lineKey = '';
    const earlier = key === '' ? undefined : this.seen.get(key);
    if (earlier !== undefined) {
      this.errors.push({
        path: this.groupName,
        message: `Order ${shown(key)} already appeared at ${lineRange(earlier[0], earlier[1])}; the rows of one order must be contiguous`,
      });
    }
    fill(this.value, this.header, cells, '', this.errors);
    this.addLine(cells, line);
  }

  private addLine(cells: string[], line: number): void {
    this.rows.push(line);
    const lines = this.lines;
    if (lines === undefined) return;
    if (this.parts === undefined) {
      const item: Record<string, unknown> = {};
      fill(item, lines, cells, `${lines.name}[${this.items.length}].`, this.errors);
      this.items.push(item);
      return;
    }
    // Work orders: a row is one part; consecutive rows with the same line key share a line.
    const lineKey = cells[this.partGroupAt]!;
    let item = this.items[this.items.length - 1];
    if (item !== undefined && lineKey !== '' && lineKey === this.lineKey) {
      this.sameValues(
        lines,
        this.lineFirst,
        cells,
        line,
        `${lines.name}[${this.items.length - 1}].`,
        `${lines.name} entry`,
      );
      if (this.lineRange) this.lineRange[1] = line;
    } else {
      const prefix = `${lines.name}[${this.items.length}].`;
      const earlier = lineKey === '' ? undefined : this.lineSeen.get(lineKey);
      if (earlier !== undefined) {
        this.errors.push({
          path: prefix + this.partGroupName,
          message: `${this.partGroupName} ${shown(lineKey)} already appeared at ${lineRange(earlier[0], earlier[1])} of this order; the rows of one ${lines.name} entry must be contiguous`,
        });
      }
      this.lineRange = undefined;
      if (earlier === undefined && lineKey !== '')
        this.lineSeen.set(lineKey, (this.lineRange = [line, line]));
      item = {};
      fill(item, lines, cells, prefix, this.errors);
      item[this.parts.name] = [];
      this.items.push(item);
      this.lineStarts.push(this.rows.length - 1);
      this.lineKey = lineKey;
      this.lineFirst = cells;
    }
    const parts = item[this.parts.name] as Array<Record<string, unknown>>;
    const part: Record<string, unknown> = {};
    fill(
      part,
      this.parts,
      cells,
      `${lines.name}[${this.items.length - 1}].${this.parts.name}[${parts.length}].`,
      this.errors,
    );
    parts.push(part);
  }

  /** Values that repeat on every row of an order (or of a finished good) must not differ. */
  private sameValues(
    lvl: Level,
    first: readonly string[],
    cells: readonly string[],
    line: number,
    prefix: string,
    what: string,
  ): void {
    const { at } = lvl;
    for (let f = 0; f < at.length; f++) {
      const i = at[f]!;
      if (cells[i] === first[i]) continue;
      const path = prefix + lvl.names[f]!;
      if (this.differing?.has(path)) continue;
      (this.differing ??= new Set()).add(path);
      const firstLine =
        what === 'order' ? this.rows[0]! : this.rows[this.lineStarts[this.lineStarts.length - 1]!]!;
      this.errors.push({
        path,
        message: `Expected the same value on every row of this ${what}: line ${firstLine} has ${shown(first[i]!)}, line ${line} has ${shown(cells[i]!)}`,
      });
    }
  }
}

/** Copies one level's cells into `target`: numbers parsed strictly, empty text left out. */
function fill(
  target: Record<string, unknown>,
  lvl: Level,
  cells: readonly string[],
  prefix: string,
  errors: Errors,
): void {
  const { names, at, numeric } = lvl;
  for (let f = 0; f < names.length; f++) {
    const cell = cells[at[f]!]!;
    if (!numeric[f]) {
      if (cell !== '') target[names[f]!] = cell;
      continue;
    }
    const n = parseNumber(cell);
    if (n === undefined) {
      errors.push({
        path: prefix + names[f]!,
        message: `Expected a number, received ${cell === '' ? 'an empty value' : shown(cell)}`,
      });
    } else {
      target[names[f]!] = n;
    }
  }
}

function required(found: ReadonlyMap<string, number>, column: string, option: string): number {
  const at = found.get(column);
  // A layout bug, not the partner's: the column named by groupBy must be one of the layout's own.
  if (at === undefined)
    throw new Error(`CsvLayout ${option} names ${column}, which is not a column of the layout`);
  return at;
}

/** A cell value inside a message: quoted, and cut to 40 characters. */
function shown(value: string): string {
  if (value === '') return 'an empty value';
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}

export const lineRange = (first: number, last: number): string =>
  first === last ? `line ${first}` : `lines ${first}-${last}`;
