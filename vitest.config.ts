import { defineConfig } from 'vitest/config';

/**
 * Tests that need no RabbitMQ, sshd, S3 or child process: `npm run test:unit` runs only these, for
 * the inner loop. Everything else talks to the real services `npm test` brings up.
 */
const UNIT = [
  'test/config/**/*.test.ts',
  'test/errors.test.ts',
  'test/records/**/*.test.ts',
  'test/decode/*.test.ts',
  // x12-drop and validate-x12 run the CLI as a process: services.
  'test/decode/x12/{envelope,ledger}.test.ts',
  'test/ingest/{message-id,repeat-filter,route}.test.ts',
  'test/http/{auth,abuse-units}.test.ts',
  'test/publish/embedded.test.ts',
  'test/schedule/{jobs,pipeline-schedule}.test.ts',
  'test/drops/{definition,receipts,upload-ready}.test.ts',
  'test/drops/state/**/*.test.ts',
  'test/drops/try/owed.test.ts',
  'test/history/{writer,prune}.test.ts',
  'test/ids.test.ts',
  'test/docs/**/*.test.ts',
  'test/events/{catalog,config,outbound-config,subscriptions}.test.ts',
  'test/events/state/**/*.test.ts',
  'test/events/destinations/webhook/{deadlines,sign,ssrf-addresses}.test.ts',
  'test/events/destinations/file/format.test.ts',
  'test/portal/{links,pieces,sign-in,event-pages,operator-pieces}.test.ts',
];

/**
 * Tests against services run as a fleet (a three-node RabbitMQ cluster, a Redis Sentinel set;
 * nodes killed and stopped under load): their own project, `npm run test:fleet`, so the inner loop
 * stays fast (docs/testing.md).
 */
const FLEET = 'test/fleet/**/*.test.ts';

/**
 * What could differ on the machine's own Node line when it is not the LTS line that runs
 * everything (`scripts/test.sh`): the native addon (the embedded history) and `serve` with it.
 * `TEST_SET=machine-line` runs these and the unit project.
 */
const MACHINE_LINE = ['test/history/embedded.test.ts', 'test/history/kill.test.ts'];

const unit = { extends: true, test: { name: 'unit', include: UNIT } } as const;

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores here: more workers only add contention with the broker.
    maxWorkers: 2,
    projects:
      process.env.TEST_SET === 'machine-line'
        ? [
            unit,
            {
              extends: true,
              test: {
                name: 'machine-line',
                include: MACHINE_LINE,
                globalSetup: ['test/setup/services.ts', 'test/setup/cli-build.ts'],
              },
            },
          ]
        : [
            unit,
            {
              extends: true,
              test: {
                name: 'services',
                include: ['test/**/*.test.ts'],
                exclude: [...UNIT, FLEET],
                globalSetup: ['test/setup/services.ts', 'test/setup/cli-build.ts'],
              },
            },
            {
              // Services run as a fleet — a three-node RabbitMQ cluster and a Redis Sentinel set — started
              // once per run and shared: apart, so that the inner loop stays fast. One file at a time,
              // since every test kills or stops nodes of those shared sets; and after the other projects
              // (groupOrder), so that three more brokers killed under load never compete with them for
              // the two cores and the disk, and the gaps these tests measure are the fleet's own.
              extends: true,
              test: {
                name: 'fleet',
                sequence: { groupOrder: 1 },
                include: [FLEET],
                globalSetup: [
                  'test/setup/services.ts',
                  'test/setup/redis-sentinel.ts',
                  'test/setup/rabbit-cluster.ts',
                ],
                fileParallelism: false,
                testTimeout: 180_000,
                hookTimeout: 180_000,
              },
            },
          ],
  },
});
