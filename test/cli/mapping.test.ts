import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli-process.js';
import { tempFolder } from '../support/temp.js';

/** `mapping try`: what a pipeline's mapping makes of a sample, as a real process; exit codes as `validate`. */
const FIXTURES = path.resolve('fixtures/mapped');
const folder = tempFolder('cli-mapping-');
const cli = (args: string[]) =>
  runCli(['mapping', 'try', ...args], { env: { INGEST_ENV: 'development' }, timeoutMs: 30_000 });
const pipelineOf = (name: string) => path.join(FIXTURES, name, 'pipeline.yaml');
const fixture = (name: string, file: string) => [pipelineOf(name), path.join(FIXTURES, name, file)];

describe('mapping try', () => {
  it('prints the records a valid sample makes, after the onboarding profile: exit 0', async () => {
    const { code, stdout } = await cli(fixture('header-lines-csv', 'orders.csv'));
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines.slice(0, 2).map((line) => JSON.parse(line))).toMatchObject([
      { identifiers: { shipmentId: 'ERP-5001', businessId: 'DEMO', site: 'UK01' } },
      { identifiers: { shipmentId: 'ERP-5002' } },
    ]);
    expect(lines[2]).toMatch(/orders\.csv: valid — 2 sales-orders record\(s\) for DEMO$/);
  });

  it('prints the errors of a broken sample in partner terms: exit 1', async () => {
    const { code, stdout } = await cli(fixture('header-lines-csv', 'broken.csv'));
    expect(code).toBe(1);
    expect(stdout).toContain('  record 0: line 3, column Sku: shipmentLines[1].skuId: Required');
  });

  it('says why a sample is refused whole (a group out of place): exit 1', async () => {
    const sample = folder.write(
      'split.csv',
      'OrderNo,CustomerRef,CustomerPO,DueDate,Carrier,LineNo,Sku,Qty,Unit,Price\nA,C,P,2026-11-24,DHL,1,S,1,EA,1\nB,C,P,2026-11-24,DHL,1,S,1,EA,1\nA,C,P,2026-11-24,DHL,2,S,1,EA,1\n',
    );
    const { code, stdout } = await cli([pipelineOf('header-lines-csv'), sample, '--json']);
    expect(code).toBe(1);
    expect(JSON.parse(stdout)).toMatchObject({
      status: 400,
      detail:
        'The rows of group "A" (OrderNo) are not together: line 2 and again line 4. Sort the file by OrderNo.',
    });
  });

  it('exit 2 for a mapping that does not compile, naming the file and the position', async () => {
    folder.write('bad.jsonata', '{ "identifiers": { "shipmentId": OrderNo ');
    const pipeline = folder.write(
      'bad.yaml',
      'name: bad\nbusinessId: DEMO\nkind: sales-orders\nformat: csv\nsource: { type: local, path: /unused }\nmapping: { file: bad.jsonata }\n',
    );
    const { code, stderr } = await cli([
      pipeline,
      path.join(FIXTURES, 'header-lines-csv', 'orders.csv'),
    ]);
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /bad\.yaml: mapping\.file: .*bad\.jsonata does not compile at position \d+: /,
    );
  });

  it('exit 2 for a usage error or a missing sample', async () => {
    expect((await cli([])).code).toBe(2);
    expect(
      (await cli([pipelineOf('header-lines-csv'), path.join(folder.dir, 'missing.csv')])).code,
    ).toBe(2);
  });
});
