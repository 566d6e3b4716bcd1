import { defineConfig } from 'vitest/config';

/**
 * Tests that need no RabbitMQ, sshd, S3 or child process: `npm run test:unit` runs only these, for
 * the inner loop. Everything else talks to the real services `npm test` brings up.
 */
const UNIT = [
  'test/config/**/*.test.ts',
  'test/errors.test.ts',
  'test/records/**/*.test.ts',
  'test/decode/**/*.test.ts',
  'test/pipeline/{message-id,repeat-filter,route}.test.ts',
  'test/http/{auth,abuse-units}.test.ts',
  'test/publish/embedded.test.ts',
  'test/schedule/{jobs,pipeline-schedule}.test.ts',
  'test/drops/{definition,receipts,upload-ready}.test.ts',
  'test/drops/state/**/*.test.ts',
  'test/drops/try/owed.test.ts',
  'test/history/{writer,prune}.test.ts',
  'test/docs/**/*.test.ts',
  'test/events/{config,outbound-config,subscriptions}.test.ts',
  'test/events/state/**/*.test.ts',
  'test/events/destinations/webhook/{deadlines,sign,ssrf-addresses}.test.ts',
  'test/events/destinations/file/format.test.ts',
];

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores here: more workers only add contention with the broker.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      {
        extends: true,
        test: {
          name: 'services',
          include: ['test/**/*.test.ts'],
          exclude: UNIT,
          globalSetup: ['test/setup/services.ts'],
        },
      },
    ],
  },
});
