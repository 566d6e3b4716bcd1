import type { Publisher } from './publisher.js';

/**
 * The sandbox publisher (spec §1: the sandbox "validates payload shape … creates nothing").
 * Every batch is accepted and dropped; there is nothing that could be unready.
 */
export function createNonePublisher(): Publisher {
  return {
    name: 'none',
    target: 'sandbox: nothing is published',
    async start() {},
    async publish() {},
    async readiness() {
      return { ready: true, problems: [] };
    },
    async close() {},
  };
}
