/**
 * What a mapping made of one group (a row, an input object, or the rows of one `groupBy` value)
 * as candidates for validation: the business id set from the pipeline, the onboarding profile
 * filling what the mapping left out, and every error put back in the partner's terms — the
 * line (and column) of their file it came from.
 */
import type { KindName } from '../records/kind.js';
import { applyDefaults } from '../records/legacy/mapping.js';
import { isPlain, setKeys } from '../records/legacy/paths.js';
import type { Candidate } from './candidate.js';
import type { CompiledMapping } from './mapping.js';

/** One group as the mapping saw it: its input objects and their places (CSV lines, JSON indexes + 1). */
export interface Group {
  readonly values: readonly Record<string, unknown>[];
  readonly places: readonly number[];
  /** Whether the mapping saw the array of the group's objects (`groupBy`), or one object. */
  readonly grouped: boolean;
}

export interface RecordSettings {
  readonly kind: KindName;
  readonly businessIdPath: readonly string[];
  readonly businessId: string;
  /** The business's onboarding profile for the kind: v2 path (`[]` = every item) → value. */
  readonly defaults: Readonly<Record<string, unknown>> | undefined;
  readonly mapping: CompiledMapping;
  /** A place in words: `line 7` (CSV), `orders[6]` (JSON). */
  readonly placeName: (first: number, last: number) => string;
  /** What an input field is called: `column` (CSV) or `field` (JSON). */
  readonly fieldWord: string;
}

/**
 * Items the profile supplies whole (an address, a contact) carry the record's own id, as v1
 * gives them its order number: filled where the mapping and the profile left it out.
 */
const ITEM_IDS: Partial<Record<KindName, { from: readonly string[]; to: readonly string[] }>> = {
  'sales-orders': {
    from: ['identifiers', 'shipmentId'],
    to: ['shipAddresses[].shipmentId', 'shipContacts[].shipmentId', 'shipmentLines[].shipmentId'],
  },
};

/** The candidates of one group's mapping output: none, one, or (without `groupBy`) several. */
export function groupCandidates(
  output: unknown,
  group: Group,
  settings: RecordSettings,
): Candidate[] {
  if (output === undefined) return []; // the mapping left this input out (a trailer row, a filter)
  const span = spanOf(group, settings);
  if (group.grouped && Array.isArray(output) && output.length !== 1)
    return [
      refused(
        group,
        `${span}: the mapping made ${output.length} records of one group; with groupBy it makes one`,
      ),
    ];
  const records = Array.isArray(output) ? output : [output];
  return records.map((record) => {
    if (isPlain(record)) complete(record, settings);
    return {
      record,
      explain: (v2Errors) => v2Errors.map((error) => locate(error, record, group, settings)),
      line: group.places[0],
    };
  });
}

/** A group the mapping failed on: one candidate carrying only its error. */
export function refused(group: Group, error: string): Candidate {
  return { record: undefined, early: [error], explain: () => [error], line: group.places[0] };
}

export function spanOf(group: Group, settings: Pick<RecordSettings, 'placeName'>): string {
  const { places } = group;
  return settings.placeName(places[0] ?? 0, places.at(-1) ?? 0);
}

function complete(record: Record<string, unknown>, settings: RecordSettings): void {
  // The pipeline's business, whatever the mapping said: a partner's file never chooses it.
  setKeys(record, settings.businessIdPath, settings.businessId);
  if (settings.defaults) applyDefaults(record, settings.defaults);
  const ids = ITEM_IDS[settings.kind];
  if (!ids) return;
  let id: unknown = record;
  for (const key of ids.from) id = isPlain(id) ? id[key] : undefined;
  if (typeof id === 'string') applyDefaults(record, Object.fromEntries(ids.to.map((p) => [p, id])));
}

/**
 * `shipmentLines[1].quantities.ordered: Expected number` → `line 12, column Qty: shipmentLines[1]…`.
 * An index into an array with one item per row of the group names that row; the field names
 * the column the expression reads it from, when it reads one.
 */
function locate(error: string, record: unknown, group: Group, settings: RecordSettings): string {
  const split = error.indexOf(': ');
  const path = split < 0 ? '' : error.slice(0, split);
  let where = spanOf(group, settings);
  const item = /^([A-Za-z0-9_]+)\[(\d+)\]/.exec(path);
  if (item && group.grouped && isPlain(record)) {
    const list = record[item[1] ?? ''];
    const index = Number(item[2]);
    const place = group.places[index];
    if (Array.isArray(list) && list.length === group.values.length && place !== undefined)
      where = settings.placeName(place, place);
  }
  const fields = settings.mapping.fieldsOf(path.replace(/\[\d+\]/g, ''));
  const named =
    fields.length === 0
      ? ''
      : `, ${settings.fieldWord}${fields.length > 1 ? 's' : ''} ${fields.join(', ')}`;
  return `${where}${named}: ${error}`;
}
