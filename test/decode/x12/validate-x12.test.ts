import { describe, expect, it } from 'vitest';
import { runCli } from '../../support/cli-process.js';

const FIXTURES = new URL('../../../fixtures/x12/', import.meta.url).pathname;

/** `validate --format x12`: the drop's checks offline, errors in the partner's terms. */
describe('warehouse-ingest validate --format x12', () => {
  it('prints the errors of a refused interchange by set, segment and element, exit 1', async () => {
    const { code, stdout, stderr } = await runCli(
      [
        'validate',
        `${FIXTURES}invalid/940-quantity.x12`,
        '--kind',
        'sales-orders',
        '--format',
        'x12',
        '--business',
        'DEMO',
        '--json',
      ],
      { env: { INGEST_ENV: 'development' }, timeoutMs: 30_000 },
    );
    expect(stderr).toBe('');
    expect(code).toBe(1);
    const problem = JSON.parse(stdout) as { errors: Array<{ index: number; errors: string[] }> };
    expect(problem.errors[0]?.errors[0]).toBe(
      'transaction set 0001, segment 14 (W01), element 01: Expected a number, received "TWELVE"',
    );
  });

  it('needs --business: an interchange carries none of ours', async () => {
    const { code, stderr } = await runCli(
      ['validate', `${FIXTURES}940-004010-tilde.x12`, '--kind', 'sales-orders', '--format', 'x12'],
      { env: { INGEST_ENV: 'development' }, timeoutMs: 30_000 },
    );
    expect(code).toBe(2);
    expect(stderr).toContain("--format x12 needs --business (the pipeline's business)");
  });
});
