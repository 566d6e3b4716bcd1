import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadPipelines, pipelineJsonSchema } from '../../src/drops/definition.js';
import { problemsOf } from '../support/config-problems.js';
import { tempFolder } from '../support/temp.js';

const EXAMPLES = new URL('../../pipelines/examples/', import.meta.url).pathname;

const problems = (dir: string, tenants?: string[]) =>
  problemsOf(() => loadPipelines(dir, { tenants }));

describe('pipeline definitions', () => {
  it('loads the examples with their defaults filled in', () => {
    const pipelines = loadPipelines(EXAMPLES);
    expect(pipelines.map((p) => p.name)).toEqual([
      'acme-orders',
      'globex-products',
      'initech-returns',
    ]);
    const acme = pipelines[0]!;
    expect(acme).toMatchObject({
      kind: 'sales-orders',
      format: 'v1-csv',
      source: {
        type: 'sftp',
        port: 22,
        timeoutMs: 30000,
        privateKey: { file: '/run/secrets/acme-sftp-key' },
      },
      readiness: { strategy: 'marker', checks: 2, markerSuffix: '.done' },
      after: {
        success: 'move',
        failure: 'move',
        processedFolder: 'processed',
        failedFolder: 'failed',
      },
      claimLeaseMs: 600000,
    });
    expect(Object.isFrozen(acme)).toBe(true);
  });

  it('refuses inline secrets, unpinned SFTP hosts, unknown tenants and typos, naming file and field', () => {
    const temp = tempFolder();
    const file = temp.write(
      'bad.yaml',
      [
        'name: Bad_Name',
        'businessId: NOBODY',
        'kind: sales-order',
        'format: v1-csv',
        'source: { type: sftp, host: h, username: u, password: "inline-secret", path: /in }',
        'shedule: { pollIntervalMs: 5 }',
      ].join('\n'),
    );
    const found = problems(temp.dir, ['ACME']);
    expect(found.every((p) => p.file === file)).toBe(true);
    expect(found.map((p) => p.field)).toEqual(['name', 'kind', 'source.password', 'shedule']);
    expect(JSON.stringify(found)).not.toContain('inline-secret');
  });

  it('checks pipelines against tenants and one another', () => {
    const temp = tempFolder();
    const body =
      'businessId: ACME\nkind: master-data\nformat: v2-json\nsource: { type: local, path: /tmp/x }\n';
    temp.write('a.yaml', `name: same\n${body}`);
    const second = temp.write('b.yaml', `name: same\n${body}`);
    expect(problems(temp.dir, ['ACME'])).toEqual([
      { file: second, field: 'name', message: expect.stringContaining('already the name of') },
    ]);
    temp.write(
      'b.yaml',
      `name: other\n${body.replace('local, path: /tmp/x', 'sftp, host: h, username: u, path: /in')}`,
    );
    expect(problems(temp.dir, ['ACME']).map((p) => p.field)).toEqual([
      'source.hostKeyFingerprints',
      'source.privateKey',
    ]);
  });

  it('has an up-to-date JSON Schema for editors', () => {
    const committed = JSON.parse(
      readFileSync(new URL('../../pipelines/pipeline.schema.json', import.meta.url), 'utf8'),
    );
    expect(committed).toEqual(JSON.parse(JSON.stringify(pipelineJsonSchema())));
  });
});
