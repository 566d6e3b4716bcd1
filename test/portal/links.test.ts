import { describe, expect, it } from 'vitest';
import { linkUrl, signLink, verifyLink } from '../../src/portal/links.js';

const SECRET = Buffer.from('a-portal-secret-of-at-least-32-characters');
const NOW = Date.parse('2026-03-02T10:00:00Z');

describe('portal sign-in links', () => {
  it('verifies a link it signed: business, expiry and nonce', () => {
    const token = signLink(SECRET, 'ACME', NOW + 60_000, 'nonce-1');
    expect(verifyLink(SECRET, token, NOW)).toEqual({
      ok: true,
      claims: { businessId: 'ACME', exp: NOW + 60_000, nonce: 'nonce-1' },
    });
  });

  it('gives every link its own random nonce', () => {
    const nonces = new Set(
      Array.from({ length: 50 }, () => {
        const check = verifyLink(SECRET, signLink(SECRET, 'ACME', NOW + 1000), NOW);
        return check.ok ? check.claims.nonce : undefined;
      }),
    );
    expect(nonces.size).toBe(50);
  });

  it('refuses an expired link, at its expiry exactly', () => {
    const token = signLink(SECRET, 'ACME', NOW);
    expect(verifyLink(SECRET, token, NOW - 1).ok).toBe(true);
    expect(verifyLink(SECRET, token, NOW)).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuses a link whose payload or signature changed, or that another secret signed', () => {
    const token = signLink(SECRET, 'ACME', NOW + 60_000);
    const [payload, signature] = token.split('.') as [string, string];
    const other = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), b: 'EVIL' }),
    ).toString('base64url');
    expect(verifyLink(SECRET, `${other}.${signature}`, NOW)).toEqual({
      ok: false,
      reason: 'tampered',
    });
    const flipped = `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
    expect(verifyLink(SECRET, `${payload}.${flipped}`, NOW).ok).toBe(false);
    expect(verifyLink(SECRET, `${payload}.${signature.slice(0, -4)}`, NOW)).toEqual({
      ok: false,
      reason: 'tampered',
    });
    expect(verifyLink(Buffer.from('another-secret-another-secret-another'), token, NOW)).toEqual({
      ok: false,
      reason: 'tampered',
    });
  });

  it('refuses what is not a token at all', () => {
    for (const token of ['', 'abc', 'a.b.c', `${'a'.repeat(2000)}.b`, 'a b.c'])
      expect(verifyLink(SECRET, token, NOW)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('refuses a validly signed payload that is not a link', () => {
    // Signed with the right secret but not the shape of a link (only the service could make this).
    const token = signLink(SECRET, 'ACME', NOW + 1000);
    const [, signature] = token.split('.');
    expect(verifyLink(SECRET, `e30.${signature}`, NOW)).toEqual({ ok: false, reason: 'tampered' });
  });

  it('builds the URL under the public URL, token escaped', () => {
    expect(linkUrl('https://ingest.example.com', 'a.b')).toBe(
      'https://ingest.example.com/portal/login?token=a.b',
    );
    expect(linkUrl('https://example.com/ingest/', 'x')).toBe(
      'https://example.com/ingest/portal/login?token=x',
    );
  });
});
