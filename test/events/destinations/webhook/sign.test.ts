import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { parseSecret, signatureHeaders } from '../../../../src/events/destinations/webhook/sign.js';

// The published Standard Webhooks test vector (standard-webhooks/standard-webhooks, libraries' tests).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('signatureHeaders', () => {
  it('matches the Standard Webhooks test vector', () => {
    const key = parseSecret(VECTOR.secret);
    expect(key).toBeDefined();
    const headers = signatureHeaders([key!], VECTOR.id, VECTOR.timestamp, VECTOR.body);
    expect(headers).toEqual({
      'webhook-id': VECTOR.id,
      'webhook-timestamp': String(VECTOR.timestamp),
      'webhook-signature': VECTOR.signature,
    });
  });

  it('signs with both secrets during a rotation, each verifiable alone by the reference library', () => {
    const old = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const fresh = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const body = JSON.stringify({ type: 'sales-order.shipped', data: { n: 1 } });
    const now = Math.floor(Date.now() / 1000);
    const headers = signatureHeaders([parseSecret(old)!, parseSecret(fresh)!], 'evt_1', now, body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [old, fresh])
      expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
    const stranger = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    expect(() => new Webhook(stranger).verify(body, { ...headers })).toThrow();
  });

  it('refuses malformed or short secrets, and never prints a key', () => {
    expect(parseSecret('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBeUndefined();
    expect(parseSecret('whsec_not base64!')).toBeUndefined();
    expect(parseSecret(`whsec_${Buffer.alloc(8).toString('base64')}`)).toBeUndefined();
    const key = parseSecret(VECTOR.secret)!;
    expect(JSON.stringify({ key })).toBe('{"key":"[secret]"}');
    expect(String(Object.keys(key))).toBe('');
  });
});
