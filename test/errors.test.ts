import { describe, expect, it } from 'vitest';
import { PublishFailed, Unauthorized, ValidationFailed, toProblem } from '../src/errors.js';

describe('the one mapping to problem details', () => {
  it('maps a typed error with its status, type, errors and headers', () => {
    const { problem, headers } = toProblem(
      new ValidationFailed({ detail: 'd', errors: [{ index: 0, errors: ['x: Required'] }] }),
      '/p',
    );
    expect(problem).toEqual({
      type: '/problems/validation-failed',
      title: 'Bad Request',
      status: 400,
      detail: 'd',
      instance: '/p',
      errors: [{ index: 0, errors: ['x: Required'] }],
    });
    expect(headers).toEqual({});
    expect(toProblem(new PublishFailed('gone')).headers).toEqual({ 'retry-after': '5' });
    expect(toProblem(new Unauthorized('no')).headers['www-authenticate']).toContain('Basic');
  });

  it('turns anything else into a 500 that reveals nothing of the original error', () => {
    const secret = new Error('connect ECONNREFUSED amqp://admin:hunter2@10.0.0.5');
    const { problem } = toProblem(secret, '/api/v2/sales-orders');
    expect(problem).toEqual({
      type: '/problems/internal-error',
      title: 'Internal Server Error',
      status: 500,
      detail: 'The request could not be processed. It has been logged.',
      instance: '/api/v2/sales-orders',
    });
    expect(toProblem('a thrown string').problem.status).toBe(500);
  });
});
