/**
 * The v1 golden fixtures pin the legacy converters: `fixtures/<kind>/v1/valid.json` and
 * `valid.csv` must both come out of the pipeline as exactly `expected.json`, and every
 * `invalid/<name>.json|csv` must be refused with exactly `invalid/<name>.expected.json` (the
 * 400's `errors`). Batches go through the real `ingest()` with a capturing publisher, so what
 * is compared is what the pipeline forwards, or answers. A new fixture file is picked up
 * without touching this test; `invalid/<name>.profile.json`, when present, replaces the
 * kind's onboarding profile for that fixture (e.g. `{}` to show a field with no source).
 */
import { createReadStream, existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { convertLegacyJson, legacyCsvCandidates } from '../../src/decode/legacy.js';
import { ValidationFailed } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import type { Candidate } from '../../src/ingest/batch.js';
import { createIngest } from '../../src/ingest/flow.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import type { OutboundMessage, Publisher } from '../../src/publish/publisher.js';
import { KIND_NAMES, KINDS, type KindName } from '../../src/records/index.js';
import { loadConfig } from '../../src/config.js';
import { LEGACY, profileFor, type SenderTerms } from '../../src/records/legacy/index.js';
import { BUSINESS_ID, FIXTURES } from './fixtures.js';

/** Every fixture is converted as if received at this instant (return goods use it for their dates). */
const RECEIVED_AT = '2026-03-01T12:00:00.000Z';

type Profile = Record<string, unknown>;
const readJson = (url: URL): unknown => JSON.parse(readFileSync(url, 'utf8'));

/** Publishes nothing; keeps what it was handed, as the broker would have received it. */
function capturingPublisher(): Publisher & { readonly bodies: unknown[] } {
  const bodies: unknown[] = [];
  return {
    name: 'none',
    target: 'test',
    bodies,
    async start() {},
    async publish(messages: readonly OutboundMessage[]) {
      for (const message of messages) bodies.push(JSON.parse(message.body.toString('utf8')));
    },
    async readiness() {
      return { ready: true, problems: [] };
    },
    async close() {},
  };
}

/** The records part of a batch: in memory for JSON; streamed (opened twice) for CSV, as HTTP and file drops do. */
function convert(
  kind: KindName,
  file: URL,
  profile: Profile,
):
  | { mode: 'array'; records: unknown[]; senderTerms: SenderTerms }
  | { mode: 'stream'; open: () => AsyncIterable<Candidate> } {
  const converter = LEGACY[kind]!;
  const options = {
    converter,
    businessId: BUSINESS_ID,
    context: { defaults: profile, receivedAt: RECEIVED_AT },
  };
  // CSV is streamed from the file in small chunks, as an HTTP body or a file drop would be.
  if (file.pathname.endsWith('.csv'))
    return {
      mode: 'stream',
      open: legacyCsvCandidates(() => createReadStream(file, { highWaterMark: 64 }), options),
    };
  return convertLegacyJson(readJson(file), options);
}

/** Runs one v1 input through conversion and the pipeline: the forwarded records, or the 400's errors. */
async function ingestV1(
  kind: KindName,
  file: URL,
  profile: Profile,
): Promise<{ forwarded: unknown[] } | { errors: unknown }> {
  const converted = convert(kind, file, profile);
  const publisher = capturingPublisher();
  const ingest = createIngest({
    publisher,
    routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
  });
  try {
    await ingest({
      kind: KINDS[kind],
      businessId: BUSINESS_ID,
      ...converted,
      correlationId: 'legacy-fixtures',
      source: { type: 'test', name: file.pathname },
      log: createLogger({ level: 'silent' }),
    });
  } catch (error) {
    if (error instanceof ValidationFailed) return { errors: error.errors };
    throw error;
  }
  return { forwarded: publisher.bodies };
}

/** `invalid/` inputs: every `.json` or `.csv` that is not an expectation or a profile. */
function invalidInputs(folder: URL): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((file) => /\.(json|csv)$/.test(file) && !/\.(expected|profile)\.json$/.test(file))
    .sort();
}

it('every kind has a v1 converter and a v1 fixture folder', () => {
  for (const kind of KIND_NAMES) {
    expect(LEGACY[kind]?.kind, kind).toBe(kind);
    expect(existsSync(fileURLToPath(new URL(`${kind}/v1/valid.json`, FIXTURES))), kind).toBe(true);
  }
});

describe.each(KIND_NAMES)('%s v1 fixtures', (kind) => {
  const folder = new URL(`${kind}/v1/`, FIXTURES);
  const profile = readJson(new URL('profile.json', folder)) as Profile;
  const expected = readJson(new URL('expected.json', folder)) as unknown[];

  it('expected.json holds 2-3 records of business ACME', () => {
    expect(expected.length).toBeGreaterThanOrEqual(2);
    expect(expected.length).toBeLessThanOrEqual(3);
    expect(JSON.stringify(expected)).toContain('"businessId":"ACME"');
  });

  it.each(['valid.json', 'valid.csv'])('%s converts to exactly expected.json', async (file) => {
    expect(await ingestV1(kind, new URL(file, folder), profile)).toEqual({ forwarded: expected });
  });

  const invalid = new URL('invalid/', folder);
  const inputs = invalidInputs(invalid);
  it('has invalid fixtures, each with its own expectation', () => {
    expect(inputs.length).toBeGreaterThan(0);
    for (const input of inputs)
      expect(existsSync(new URL(expectationOf(input), invalid)), input).toBe(true);
    // `x.json` and `x.csv` would share `x.expected.json`: one input per name.
    expect(new Set(inputs.map(expectationOf)).size).toBe(inputs.length);
  });

  it.each(inputs)('invalid/%s is refused with exactly its errors', async (input) => {
    const own = new URL(input.replace(/\.(json|csv)$/, '.profile.json'), invalid);
    const result = await ingestV1(
      kind,
      new URL(input, invalid),
      existsSync(own) ? (readJson(own) as Profile) : profile,
    );
    expect(result).toEqual({ errors: readJson(new URL(expectationOf(input), invalid)) });
  });
});

describe.each([
  ['development', 'DEMO'],
  ['sandbox', 'any business (fallback "*")'],
])('the %s onboarding profile of %s', (environment, owner) => {
  const { onboarding } = loadConfig({ env: { INGEST_ENV: environment } });
  const businessId = owner === 'DEMO' ? 'DEMO' : BUSINESS_ID;

  // The fixtures' own values differ; what matters is that nothing v2 requires is left out.
  it.each(KIND_NAMES)('completes every valid %s v1 record', async (kind) => {
    const profile = profileFor(onboarding, businessId, kind);
    expect(profile).toBeDefined();
    const result = await ingestV1(kind, new URL(`${kind}/v1/valid.json`, FIXTURES), profile!);
    expect(result).toMatchObject({ forwarded: expect.any(Array) });
  });
});

/** `invalid/<name>.json` or `invalid/<name>.csv` → `invalid/<name>.expected.json`. */
function expectationOf(input: string): string {
  return input.replace(/\.(json|csv)$/, '.expected.json');
}
