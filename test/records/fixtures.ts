/** Loads the golden fixtures of `fixtures/<kind>/` (valid.json and every invalid/*.json). */
import { readdirSync, readFileSync } from 'node:fs';
import type { RecordErrors } from '../../src/errors.js';
import type { KindName, RecordKind } from '../../src/records/index.js';
import { validateRecord } from '../../src/records/index.js';

export const FIXTURES = new URL('../../fixtures/', import.meta.url);

/** Every fixture is written for this authenticated business. */
export const BUSINESS_ID = 'ACME';

export interface InvalidFixture {
  file: string;
  description: string;
  batch: unknown[];
  errors: RecordErrors[];
}

const readJson = (url: URL): unknown => JSON.parse(readFileSync(url, 'utf8'));

export function validRecords(kind: KindName): Record<string, unknown>[] {
  return readJson(new URL(`${kind}/valid.json`, FIXTURES)) as Record<string, unknown>[];
}

export function invalidFixtures(kind: KindName): InvalidFixture[] {
  const folder = new URL(`${kind}/invalid/`, FIXTURES);
  return readdirSync(folder)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({
      file,
      ...(readJson(new URL(file, folder)) as Omit<InvalidFixture, 'file'>),
    }));
}

/** What the 400 problem's `errors` holds for a batch: one entry per failing record, by index. */
export function batchErrors(
  kind: RecordKind,
  batch: readonly unknown[],
  businessId = BUSINESS_ID,
): RecordErrors[] {
  const out: RecordErrors[] = [];
  batch.forEach((record, index) => {
    const result = validateRecord(kind, record, businessId);
    if (!result.ok) out.push({ index, errors: result.errors });
  });
  return out;
}
