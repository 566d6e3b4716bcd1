import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACME, basicAuth, createTestApp, type TestApp } from '../support/http-app.js';

/**
 * docs/api.md's endpoint table says where each GET is served: a row that says "admin listener only"
 * is on the admin app only (a review found `/readyz` and `/metrics` listed as if partners could
 * reach them), every other row on the partner-facing app.
 */
const table = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('| GET |'))
  .flatMap((line) => {
    const [, paths = '', , success = ''] = line.split(' | ');
    const adminOnly = /admin listener only/.test(success);
    return [...paths.matchAll(/`(\/[^`]*)`/g)].map(([, template]) => ({
      path: template!.replace('{accountId}', 'ACME').replace('{code}', 'not-found'),
      adminOnly,
    }));
  });

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const statusOf = async (app: TestApp['app'], path: string) =>
  (await app.request(path, { headers: { authorization: basicAuth(ACME) } })).status;

describe('docs/api.md: where each GET is served', () => {
  it('lists the admin listener’s endpoints', () => {
    expect(table.filter((row) => row.adminOnly).map((row) => row.path)).toEqual([
      '/readyz',
      '/metrics',
    ]);
  });

  it.each(table)('$path (admin listener only: $adminOnly)', async ({ path, adminOnly }) => {
    if (adminOnly) {
      expect(await statusOf(t.app, path)).toBe(404);
      expect(await statusOf(t.admin, path)).not.toBe(404);
    } else expect(await statusOf(t.app, path)).not.toBe(404);
  });
});
