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

describe('authenticator during a key rotation (spec §5.6)', async () => {
  const [oldHash, newHash] = await Promise.all([
    hashApiKey('rotation-old-key-0001'),
    hashApiKey('rotation-new-key-0002'),
  ]);
  /** Which stored hashes each check was run against, in order. */
  const counting = (tenants: Parameters<typeof createAuthenticator>[0]['tenants']) => {
    const checked: string[] = [];
    const auth = createAuthenticator({
      tenants,
      acceptAnyCredentials: false,
      verify: (key, hash) => {
        checked.push(hash.hash.toString('base64'));
        return verifyApiKey(key, hash);
      },
    });
    return { auth, checked };
  };
  const digest = (phc: string) => phc.slice(phc.lastIndexOf('$') + 1);

  it('accepts both keys of apiKeyHashes, checking every hash whichever matched (no early exit)', async () => {
    for (const key of ['rotation-new-key-0002', 'rotation-old-key-0001', 'rotation-wrong-key-03']) {
      const { auth, checked } = counting([
        { businessId: 'ACME', apiKeyHashes: [newHash, oldHash] },
      ]);
      const result = auth.authenticate(basic('ACME', key));
      if (key.includes('wrong')) await expect(result).rejects.toThrow(Unauthorized);
      else await expect(result).resolves.toBe('ACME');
      expect(checked.sort()).toEqual([digest(newHash), digest(oldHash)].sort());
    }
  });

  it('after setTenants accepts only the new keys, forgetting credentials verified before', async () => {
    const { auth } = counting([{ businessId: 'ACME', apiKeyHashes: [newHash, oldHash] }]);
    await expect(auth.authenticate(basic('ACME', 'rotation-old-key-0001'))).resolves.toBe('ACME');
    expect(auth.known(basic('ACME', 'rotation-old-key-0001'))).toBe('ACME');
    auth.setTenants([{ businessId: 'ACME', apiKeyHash: newHash }]);
    expect(auth.known(basic('ACME', 'rotation-old-key-0001'))).toBeUndefined();
    await expect(auth.authenticate(basic('ACME', 'rotation-old-key-0001'))).rejects.toThrow(
      Unauthorized,
    );
    await expect(auth.authenticate(basic('ACME', 'rotation-new-key-0002'))).resolves.toBe('ACME');
  });

  it('a check in flight across setTenants completes, but is not remembered under the new keys', async () => {
    const { auth } = counting([{ businessId: 'ACME', apiKeyHash: oldHash }]);
    const inFlight = auth.authenticate(basic('ACME', 'rotation-old-key-0001'));
    auth.setTenants([{ businessId: 'ACME', apiKeyHash: newHash }]);
    await expect(inFlight).resolves.toBe('ACME');
    expect(auth.known(basic('ACME', 'rotation-old-key-0001'))).toBeUndefined();
    await expect(auth.authenticate(basic('ACME', 'rotation-old-key-0001'))).rejects.toThrow(
      Unauthorized,
    );
  });
});

describe('authenticator for a business id nobody has', () => {
  it("checks the key against a hash of the tenants' own cost, so timing does not tell the ids apart", async () => {
    const costs: number[] = [];
    const auth = createAuthenticator({
      // hash-key's cost changed (ln=15, now 17): a decoy of the old one would answer faster.
      tenants: [
        {
          businessId: 'ACME',
          apiKeyHash: await hashApiKey('acme-key-0123456789', { ln: 11, r: 8, p: 1 }),
        },
      ],
      acceptAnyCredentials: false,
      verify: (key, hash) => {
        costs.push(hash.ln);
        return verifyApiKey(key, hash);
      },
    });
    await expect(auth.authenticate(basic('NOBODY', 'a-key-0123456789'))).rejects.toThrow(
      Unauthorized,
    );
    await expect(auth.authenticate(basic('ACME', 'a-key-0123456789'))).rejects.toThrow(
      Unauthorized,
    );
    expect(costs).toEqual([11, 11]);
    // After a reload, at the new tenants' cost.
    auth.setTenants([
      {
        businessId: 'ACME',
        apiKeyHash: await hashApiKey('acme-key-0123456789', { ln: 12, r: 8, p: 1 }),
      },
    ]);
    await expect(auth.authenticate(basic('OTHER', 'a-key-0123456789'))).rejects.toThrow(
      Unauthorized,
    );
    expect(costs).toEqual([11, 11, 12]);
  });
});
