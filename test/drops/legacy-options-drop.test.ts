import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createDropRunner } from '../../src/drops/runner.js';
import { createLocalDrop } from '../../src/drops/stores/local.js';
import { createLogger } from '../../src/log.js';
import type { OnboardingProfiles } from '../../src/records/legacy/index.js';
import { FIXTURES } from '../records/fixtures.js';
import { useRealIngest } from '../support/real-ingest.js';
import { tempFolder } from '../support/temp.js';

/**
 * A v1 CSV drop of returns for a business whose onboarding profile names the returns reference
 * `ShopRef` and ignores unknown fields: the file is accepted, its receipt lists the ignored
 * column, and the broker has the records with the reference where `PlatformRef` would put it.
 */
const temp = tempFolder('legacy-options-drop-');
const read = (file: string) => readFileSync(new URL(`return-goods/v1/${file}`, FIXTURES), 'utf8');

const real = useRealIngest({ prefix: 'legacy-options' });

function runnerFor(dir: string, onboarding: OnboardingProfiles) {
  return createDropRunner({
    pipeline: pipelineSchema.parse({
      name: 'returns-drop',
      businessId: 'ACME',
      kind: 'return-goods',
      format: 'v1-csv',
      source: { type: 'local', path: dir },
      readiness: { strategy: 'rename' },
    }),
    store: createLocalDrop({ path: dir }),
    ingest: real.ingest,
    onboarding,
    environment: 'production',
    log: createLogger({ level: 'silent' }),
    spoolDirectory: path.join(dir, '..', `${path.basename(dir)}-spool`),
  });
}

describe('a v1 CSV drop under a profile with legacy options', () => {
  it('is accepted, its receipt lists the ignored column, and the alias fills the RGA number', async () => {
    const dir = path.join(temp.dir, 'drop');
    mkdirSync(dir);
    const csv = read('valid.csv')
      .replaceAll('PlatformRef', 'ShopRef')
      .split('\n')
      .map((line, i) => (line === '' ? line : `${line},${i === 0 ? 'Channel' : 'web'}`))
      .join('\n');
    writeFileSync(path.join(dir, 'returns.csv'), csv);
    const profile = JSON.parse(read('profile.json'));
    const runner = runnerFor(dir, {
      ACME: {
        'return-goods': profile,
        legacy: { platformRef: 'ShopRef', unknownFields: 'ignore' },
      },
    });
    expect(await runner.runOnce()).toMatchObject({ accepted: 1 });
    await runner.stop();
    const receipt = JSON.parse(
      readFileSync(path.join(dir, 'processed', 'returns.csv.receipt.json'), 'utf8'),
    );
    expect(receipt).toMatchObject({
      outcome: 'accepted',
      response: { recordCount: 2, ignoredFields: ['Channel'] },
    });
    const published = await real.topology.messages();
    expect(published.map((m) => m.content)).toMatchObject([
      { identifiers: { id: 'RGA-2026-0101', businessRgaNumber: 'RP-558120' } },
      { identifiers: { id: 'RGA-2026-0102', businessRgaNumber: 'RP-558121' } },
    ]);
  });
});
