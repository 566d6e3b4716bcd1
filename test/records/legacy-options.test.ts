import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { conversionContext } from '../../src/records/legacy/index.js';
import { problemsOf } from '../support/config-problems.js';
import { tempFolder } from '../support/temp.js';

/** The onboarding profile's `legacy` options as configuration: checked at start-up, with a fallback. */
const temp = tempFolder('legacy-options-');
const load = (yaml: string) =>
  loadConfig({ env: { INGEST_CONFIG: temp.write(`c-${Math.random()}.yaml`, yaml) } });

describe('onboarding.<business>.legacy', () => {
  it('is optional: existing profiles stay valid, and the defaults are PlatformRef and refuse', () => {
    const config = load('onboarding:\n  DEMO:\n    return-goods: { location.warehouse: W1 }\n');
    const context = conversionContext(config.onboarding, 'DEMO', 'return-goods', 'now');
    expect(context.names).toBeUndefined();
    expect(context.ignored).toBeUndefined();
  });

  it('names the returns reference and ignores unknown fields, per business, the fallback filling gaps', () => {
    const config = load(
      [
        'onboarding:',
        '  DEMO: { legacy: { platformRef: ShopRef } }',
        "  '*': { legacy: { platformRef: Other, unknownFields: ignore } }",
      ].join('\n'),
    );
    const demo = conversionContext(config.onboarding, 'DEMO', 'return-goods', 'now');
    expect(demo.names).toEqual({ PlatformRef: 'ShopRef' });
    expect(demo.ignored).toBeDefined();
    // Only the returns kind has the field.
    expect(
      conversionContext(config.onboarding, 'DEMO', 'sales-orders', 'now').names,
    ).toBeUndefined();
    expect(conversionContext(config.onboarding, 'ELSE', 'return-goods', 'now').names).toEqual({
      PlatformRef: 'Other',
    });
  });

  it('refuses a wire name that is another returns field or column, or not a name, naming file and field', () => {
    for (const [name, message] of [
      ['OrdRef1', /Already the name of another v1 returns field/],
      ['rOrderLines_Qty', /Already the name of another v1 returns field/],
      ['Shop Ref', /Expected a field name/],
    ] as const) {
      const problems = problemsOf(() =>
        load(`onboarding:\n  DEMO: { legacy: { platformRef: "${name}" } }\n`),
      );
      expect(problems).toEqual([
        expect.objectContaining({
          file: expect.stringMatching(/\.yaml$/),
          field: 'onboarding.DEMO.legacy.platformRef',
          message: expect.stringMatching(message),
        }),
      ]);
    }
    expect(
      problemsOf(() => load('onboarding:\n  DEMO: { legacy: { unknownFields: drop } }\n'))[0]
        ?.field,
    ).toBe('onboarding.DEMO.legacy.unknownFields');
    expect(
      problemsOf(() => load('onboarding:\n  DEMO: { legacy: { platfromRef: X } }\n'))[0],
    ).toMatchObject({
      field: 'onboarding.DEMO.legacy.platfromRef',
      message: 'Unknown setting (misspelt?)',
    });
  });
});

describe('tenants[].apiKeyHashes (key rotation)', () => {
  const HASH =
    '$scrypt$ln=15,r=8,p=1$+YFdvPPhv2qW47q7byFayA==$aiMeL23WTIX241/bstORfRiezMWyYL1CodQnEQDss2o=';
  const OTHER =
    '$scrypt$ln=15,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA==$aiMeL23WTIX241/bstORfRiezMWyYL1CodQnEQDss2o=';
  const tenant = (fields: string) => `tenants:\n  - businessId: ACME\n${fields}\n`;

  it('takes one or two hashes; apiKeyHash alone stays valid', () => {
    expect(load(tenant(`    apiKeyHash: "${HASH}"`)).tenants[0]).toMatchObject({
      apiKeyHash: HASH,
    });
    expect(load(tenant(`    apiKeyHashes: ["${OTHER}", "${HASH}"]`)).tenants[0]).toMatchObject({
      apiKeyHashes: [OTHER, HASH],
    });
  });

  it('refuses three hashes, both fields, neither, and a hash cut short, naming the field', () => {
    const field = (yaml: string) => problemsOf(() => load(tenant(yaml))).map((p) => p.field);
    expect(field(`    apiKeyHashes: ["${HASH}", "${OTHER}", "${HASH}"]`)).toEqual([
      'tenants[0].apiKeyHashes',
    ]);
    expect(field(`    apiKeyHash: "${HASH}"\n    apiKeyHashes: ["${OTHER}"]`)).toEqual([
      'tenants[0].apiKeyHash',
    ]);
    expect(field('    name: nobody')).toEqual(['tenants[0].apiKeyHash']);
    expect(field(`    apiKeyHashes: ["${OTHER}", "${HASH.slice(0, -4)}"]`)).toEqual([
      'tenants[0].apiKeyHashes[1]',
    ]);
  });
});
