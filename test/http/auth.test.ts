import { describe, expect, it } from 'vitest';
import { hashApiKey, verifyApiKey } from '../../src/api-keys.js';
import { Unauthorized } from '../../src/errors.js';
import { createAuthenticator, parseBasic } from '../../src/http/auth.js';

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('HTTP Basic credentials', () => {
  it('parses businessId and key, the key may hold colons', () => {
    expect(parseBasic(basic('ACME', 'k:e:y'))).toEqual({ businessId: 'ACME', apiKey: 'k:e:y' });
    expect(parseBasic(`basic   ${Buffer.from('A:b').toString('base64')}`)).toEqual({
      businessId: 'A',
      apiKey: 'b',
    });
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['other scheme', 'Bearer abc'],
    ['not base64', 'Basic !!!'],
    ['no colon', `Basic ${Buffer.from('ACME').toString('base64')}`],
    ['empty user', basic('', 'key')],
    ['empty key', basic('ACME', '')],
    ['control character', basic('AC\u0001ME', 'key')],
    ['oversized', `Basic ${'A'.repeat(5000)}`],
  ])('refuses %s credentials with 401', (_name, header) => {
    expect(() => parseBasic(header)).toThrow(Unauthorized);
  });
});

describe('authenticator', async () => {
  const tenants = [{ businessId: 'ACME', apiKeyHash: await hashApiKey('acme-secret-key-123456') }];
  const auth = createAuthenticator({ tenants, acceptAnyCredentials: false });

  it('accepts the right key and answers again from its cache', async () => {
    let derivations = 0;
    const counted = createAuthenticator({
      tenants,
      acceptAnyCredentials: false,
      verify: (key, hash) => {
        derivations += 1;
        return verifyApiKey(key, hash);
      },
    });
    for (let i = 0; i < 5; i++)
      await expect(counted.authenticate(basic('ACME', 'acme-secret-key-123456'))).resolves.toBe(
        'ACME',
      );
    expect(derivations).toBe(1); // scrypt once; the other four answers came from the cache
  });

  it('refuses a wrong key, an unknown business and a key of another business', async () => {
    await expect(auth.authenticate(basic('ACME', 'acme-secret-key-12345X'))).rejects.toThrow(
      Unauthorized,
    );
    await expect(auth.authenticate(basic('NOBODY', 'acme-secret-key-123456'))).rejects.toThrow(
      Unauthorized,
    );
  });

  it('never puts the key into the error', async () => {
    const error = await auth
      .authenticate(basic('ACME', 'wrong-key-visible'))
      .catch((e: unknown) => e);
    expect(
      JSON.stringify({
        message: (error as Error).message,
        headers: (error as Unauthorized).headers,
      }),
    ).not.toContain('wrong-key-visible');
    expect((error as Unauthorized).headers['www-authenticate']).toMatch(/^Basic realm=/);
  });

  it('in sandbox accepts any well-formed credentials, the user-id acting as business id', async () => {
    const sandbox = createAuthenticator({ tenants: [], acceptAnyCredentials: true });
    await expect(sandbox.authenticate(basic('ANY-BUSINESS', 'whatever'))).resolves.toBe(
      'ANY-BUSINESS',
    );
    await expect(sandbox.authenticate('Basic garbage!')).rejects.toThrow(Unauthorized);
  });
});

describe('authenticator under a burst of first requests', () => {
  it('runs one key check for concurrent first requests with one credential, and still refuses a wrong key', async () => {
    const tenants = [{ businessId: 'ACME', apiKeyHash: await hashApiKey('burst-key-0123456789') }];
    let checks = 0;
    const verify: typeof verifyApiKey = (key, stored) => {
      checks += 1;
      return verifyApiKey(key, stored);
    };
    const auth = createAuthenticator({ tenants, acceptAnyCredentials: false, verify });
    const results = await Promise.all(
      Array.from({ length: 12 }, () => auth.authenticate(basic('ACME', 'burst-key-0123456789'))),
    );
    expect(results).toEqual(Array(12).fill('ACME'));
    expect(checks).toBe(1);
    await expect(
      Promise.all([1, 2].map(() => auth.authenticate(basic('ACME', 'burst-key-012345678X')))),
    ).rejects.toThrow(Unauthorized);
    expect(checks).toBe(2);
  });
});
