import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createDropRunner } from '../../src/drops/runner.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
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

function runnerFor(
  dir: string,
  onboarding: OnboardingProfiles,
  options: { halvesFromBytes?: number; lines?: string[] } = {},
) {
  const { lines } = options;
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
    log: lines
      ? createLogger({ level: 'info', destination: { write: (line: string) => lines.push(line) } })
      : createLogger({ level: 'silent' }),
    spoolDirectory: path.join(dir, '..', `${path.basename(dir)}-spool`),
    ...(options.halvesFromBytes !== undefined && { halvesFromBytes: options.halvesFromBytes }),
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

  it('keeps the wire names and lists the ignored column when the file is validated in two halves', async () => {
    const dir = path.join(temp.dir, 'drop-halves');
    mkdirSync(dir);
    const [header, ...rows] = read('valid.csv').trim().split('\n');
    const returns = 400;
    const csv = [`${header!.replace('PlatformRef', 'ShopRef')},Channel`];
    for (let i = 0; i < returns; i++)
      csv.push(
        ...rows
          .slice(0, 2) // RGA-2026-0101's two rows, renumbered
          .map(
            (row) =>
              `${row.replaceAll('RGA-2026-0101', `RGA-H-${i}`).replace('RP-558120', `RP-H-${i}`)},web`,
          ),
      );
    writeFileSync(path.join(dir, 'returns.csv'), `${csv.join('\n')}\n`);
    const lines: string[] = [];
    const runner = runnerFor(
      dir,
      {
        ACME: {
          'return-goods': JSON.parse(read('profile.json')),
          legacy: { platformRef: 'ShopRef', unknownFields: 'ignore' },
        },
      },
      { halvesFromBytes: 1, lines },
    );
    expect(await runner.runOnce()).toMatchObject({ accepted: 1 });
    await runner.stop();
    expect(lines.some((line) => line.includes('"validatedInHalves":true'))).toBe(true);
    const receipt = JSON.parse(
      readFileSync(path.join(dir, 'processed', 'returns.csv.receipt.json'), 'utf8'),
    );
    expect(receipt).toMatchObject({
      outcome: 'accepted',
      response: { recordCount: returns, ignoredFields: ['Channel'] },
    });
    const published = (await real.topology.messages()).map((m) => m.content);
    expect(published).toHaveLength(returns);
    expect(published.at(0)).toMatchObject({
      identifiers: { id: 'RGA-H-0', businessRgaNumber: 'RP-H-0' },
    });
    expect(published.at(-1)).toMatchObject({
      identifiers: { id: `RGA-H-${returns - 1}`, businessRgaNumber: `RP-H-${returns - 1}` },
    });
  });
});
