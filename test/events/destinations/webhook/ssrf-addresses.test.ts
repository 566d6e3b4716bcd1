import { describe, expect, it } from 'vitest';
import {
  classifyAddress,
  guardedLookup,
} from '../../../../src/events/destinations/webhook/ssrf.js';

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['100.64.0.1', 'shared'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['::ffff:127.0.0.1', 'ipv4-mapped'],
    ['::ffff:169.254.169.254', 'ipv4-mapped'],
    ['::ffff:8.8.8.8', 'ipv4-mapped'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
  ])('%s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it.each(['8.8.8.8', '172.32.0.1', '192.169.0.1', '2001:4860:4860::8888', '100.128.0.1'])(
    '%s is public',
    (address) => expect(classifyAddress(address)).toBe('public'),
  );
});

describe('guardedLookup', () => {
  const lookupWith = (addresses: string[]) =>
    new Promise<{ error: Error | null; address: unknown }>((resolve) =>
      guardedLookup(async () =>
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      )('hooks.example', { all: true }, (error, address) => resolve({ error, address })),
    );

  it('passes public answers through', async () => {
    const { error, address } = await lookupWith(['93.184.215.14']);
    expect(error).toBeNull();
    expect(address).toEqual([{ address: '93.184.215.14', family: 4 }]);
  });

  it('refuses when any answer is not public (DNS rebinding mixes them), naming host and class', async () => {
    const { error } = await lookupWith(['93.184.215.14', '10.0.0.7']);
    expect(error?.name).toBe('DestinationRefused');
    expect(error?.message).toContain('hooks.example resolves to 10.0.0.7 (private)');
  });
});
