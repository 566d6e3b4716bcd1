/**
 * The mapped formats (`format: csv`, `format: json`): a partner's own layout, read as input
 * objects (`mapped-input.ts`), grouped when the pipeline says `groupBy`, each group given to the
 * partner's JSONata mapping (`mapping.ts`), and what it makes handed on as candidates
 * (`mapped-record.ts`) to the one validate → route → publish flow, like every other format.
 *
 * Streamed: one group in memory at a time. A group's rows must be contiguous; the groups already
 * closed are remembered (`OrderRanges`, off the heap) so one that comes back is refused naming
 * both places.
 */
import { createReadStream } from 'node:fs';
import { MalformedBody } from '../errors.js';
import type { Candidate } from './candidate.js';
import {
  csvItems,
  jsonItems,
  jsonPlace,
  type InputItem,
  type MappedCsvOptions,
} from './mapped-input.js';
import {
  groupCandidates,
  refused,
  spanOf,
  type Group,
  type RecordSettings,
} from './mapped-record.js';
import { MappingFailed, type CompiledMapping } from './mapping.js';
import { OrderRanges } from './order-ranges.js';

export type { MappedCsvOptions } from './mapped-input.js';

/** A pipeline's mapped format, compiled (`drops/definition-mapped.ts` makes it at start-up). */
export type MappedFormat =
  | (MappedCommon & { readonly format: 'csv'; readonly csv: MappedCsvOptions })
  | (MappedCommon & {
      readonly format: 'json';
      /** The JSONata path to the input objects, and its compiled form. */
      readonly records: { readonly text: string; readonly find: CompiledMapping };
    });

interface MappedCommon {
  readonly mapping: CompiledMapping;
  readonly groupBy?: string | undefined;
}

/** One group's rows at most: a group is one record, and this bounds what one can make the worker hold. */
export const MAX_GROUP_ITEMS = 10_000;
/** Groups remembered for the contiguity check (~30 bytes each, off the heap). */
export const TRACKED_GROUPS = 1_000_000;

export interface MappedDecodeOptions {
  readonly mapped: MappedFormat;
  readonly settings: Omit<RecordSettings, 'mapping' | 'placeName' | 'fieldWord'>;
  /** A JSON file larger than this is refused (it is read whole). */
  readonly maxJsonBytes: number;
}

/** The candidates of a mapped file, read from the start each time `open()` is called. */
export function mappedCandidates(
  path: string,
  options: MappedDecodeOptions,
): () => AsyncIterable<Candidate> {
  const { mapped } = options;
  const read = () => createReadStream(path, { highWaterMark: 64 * 1024 });
  if (mapped.format === 'csv') return mappedCsvCandidates(read, { ...options, mapped });
  const settings = recordSettings(mapped, options.settings);
  return () => candidates(jsonItems(path, mapped.records, options.maxJsonBytes), mapped, settings);
}

/**
 * The candidates of a mapped CSV read from `read()`: the whole file, or (`lineAfterHeader`) the
 * header row and then a later part of it; `groups` is told every group's lines.
 */
export function mappedCsvCandidates(
  read: () => AsyncIterable<Uint8Array>,
  options: Omit<MappedDecodeOptions, 'mapped' | 'maxJsonBytes'> & {
    readonly mapped: MappedFormat & { readonly format: 'csv' };
    readonly groups?: OrderRanges;
    readonly lineAfterHeader?: number;
  },
): () => AsyncIterable<Candidate> {
  const { mapped, lineAfterHeader, groups } = options;
  const settings = recordSettings(mapped, options.settings);
  return () => candidates(csvItems(read(), mapped.csv, lineAfterHeader), mapped, settings, groups);
}

function recordSettings(
  mapped: MappedFormat,
  settings: MappedDecodeOptions['settings'],
): RecordSettings {
  const records = mapped.format === 'json' ? mapped.records.text : '';
  return {
    ...settings,
    mapping: mapped.mapping,
    ...(mapped.format === 'csv'
      ? { placeName: linesName, fieldWord: 'column' }
      : {
          placeName: (first: number, last: number) =>
            first === last
              ? jsonPlace(records, first)
              : `${jsonPlace(records, first)} to ${jsonPlace(records, last)}`,
          fieldWord: 'field',
        }),
  };
}

const linesName = (first: number, last: number) =>
  first === last ? `line ${first}` : `lines ${first}-${last}`;

async function* candidates(
  items: AsyncIterable<InputItem>,
  mapped: MappedFormat,
  settings: RecordSettings,
  groups?: OrderRanges,
): AsyncGenerator<Candidate> {
  const { groupBy } = mapped;
  let any = false;
  if (groupBy === undefined) {
    for await (const item of items) {
      any = true;
      yield* await mapGroup(
        { values: [item.value], places: [item.place], grouped: false },
        settings,
      );
    }
  } else {
    const seen = groups ?? new OrderRanges(TRACKED_GROUPS);
    let key: string | undefined;
    let values: Record<string, unknown>[] = [];
    let places: number[] = [];
    const close = () => {
      const group: Group = { values, places, grouped: true };
      if (key !== undefined) seen.remember(key, places[0] ?? 0, places.at(-1) ?? 0);
      values = [];
      places = [];
      return group;
    };
    for await (const item of items) {
      any = true;
      const next = groupKey(item.value[groupBy]);
      if (next !== key && values.length > 0) yield* await mapGroup(close(), settings);
      if (next !== key) {
        const earlier = seen.get(next);
        if (earlier)
          throw new MalformedBody({
            detail: `The rows of group "${next.slice(0, 60)}" (${groupBy}) are not together: ${settings.placeName(...earlier)} and again ${settings.placeName(item.place, item.place)}. Sort the file by ${groupBy}.`,
          });
        key = next;
      }
      if (values.length >= MAX_GROUP_ITEMS)
        throw new MalformedBody({
          detail: `Group "${next.slice(0, 60)}" (${groupBy}) has more than ${MAX_GROUP_ITEMS} rows, from ${settings.placeName(places[0] ?? 0, places[0] ?? 0)}`,
        });
      values.push(item.value);
      places.push(item.place);
    }
    if (values.length > 0) yield* await mapGroup(close(), settings);
  }
  if (!any) throw new MalformedBody({ detail: 'The file has no data rows' });
}

/** A missing group column is a group of its own (`''`), like any other value. */
const groupKey = (value: unknown): string =>
  value === undefined || value === null
    ? ''
    : typeof value === 'string'
      ? value
      : JSON.stringify(value);

async function mapGroup(group: Group, settings: RecordSettings): Promise<Candidate[]> {
  let output: unknown;
  try {
    output = await settings.mapping.evaluate(group.grouped ? group.values : group.values[0]);
  } catch (error) {
    if (!(error instanceof MappingFailed)) throw error;
    const span = spanOf(group, settings);
    // A runaway costs its whole time limit: one is enough to refuse the file, never one per group.
    if (error.runaway)
      throw new MalformedBody({
        detail: `The mapping ran out of bounds on ${span} and the file is refused: ${error.reason}`,
      });
    return [refused(group, `${span}: the mapping failed: ${error.reason}`)];
  }
  return groupCandidates(output, group, settings);
}
