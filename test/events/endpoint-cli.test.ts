import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'amqplib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { emitEvent } from '../../src/cli/events/emit.js';
import { createPostgresHistory } from '../../src/history/postgres/index.js';
import { AMQP_URL } from '../support/broker.js';
import { runCli } from '../support/cli-process.js';
import { deleteEventsTopology, testEventsConfig } from '../support/events-harness.js';
import { freshDatabase } from '../support/postgres.js';
import { tempFolder } from '../support/temp.js';

/** `events disable`, `enable` and `status` as an operator runs them, on the real broker and PostgreSQL. */
const HASH =
  '$scrypt$ln=15,r=8,p=1$P4mj2DSIu5Ti9cXn7sZbXQ==$C3Wzja6iSISVrNvcxP0aEyG7A82Rij+6A97m8yzBm3o=';
const events = testEventsConfig();
let database: Awaited<ReturnType<typeof freshDatabase>>;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  database = await freshDatabase('cli');
  // The topology a worker would have declared (`events status` looks at its queues).
  await emitEvent({
    url: AMQP_URL,
    events,
    businessId: 'ACME',
    type: 'sales-order.shipped',
    data: {},
  });
  const temp = tempFolder('events-switch-');
  const pipelines = path.join(temp.dir, 'pipelines');
  mkdirSync(pipelines);
  const tenant = (businessId: string) => [
    `  - businessId: ${businessId}`,
    `    apiKeyHash: "${HASH}"`,
    '    webhooks:',
    `      - { id: main, url: "http://127.0.0.1:9/${businessId}", secret: { env: HOOK_SECRET } }`,
  ];
  const config = temp.write(
    'config.yaml',
    [
      `dataDirectory: ${temp.dir}/data`,
      `pipelinesDirectory: ${pipelines}`,
      'broker: { queues: [] }',
      `events: ${JSON.stringify(events)}`,
      `history: { enabled: true, url: "${database.url}" }`,
      'tenants:',
      ...tenant('ACME'),
      ...tenant('GLOBEX'),
      '',
    ].join('\n'),
  );
  env = {
    INGEST_CONFIG: config,
    AMQP_URL,
    HOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  };
});
afterAll(async () => {
  await database?.drop();
  const connection = await connect(AMQP_URL);
  await deleteEventsTopology(await connection.createChannel(), events);
  await connection.close();
});

it('disables and enables one business endpoint, kept in the history, and status shows it to that business only', async () => {
  const ambiguous = await runCli(['events', 'disable', '--endpoint', 'main'], { env });
  expect(ambiguous.code, ambiguous.stderr).toBe(2);
  expect(ambiguous.stderr).toContain('several businesses (ACME, GLOBEX): add --business');
  const unknown = await runCli(['events', 'disable', '--endpoint', 'nope'], { env });
  expect(unknown.code).toBe(2);

  const disabled = await runCli(['events', 'disable', '--endpoint', 'main', '--business', 'ACME'], {
    env,
  });
  expect(disabled, disabled.stderr).toMatchObject({ code: 0, stdout: 'disabled ACME main\n' });
  const store = createPostgresHistory({ url: database.url });
  try {
    expect(await store.endpointStates({ operator: true })).toEqual([
      expect.objectContaining({
        businessId: 'ACME',
        endpoint: 'main',
        enabled: false,
        disabledBy: 'operator',
      }),
    ]);

    const json = await runCli(['events', 'status', '--business', 'ACME', '--json'], { env });
    expect(json.code, json.stderr).toBe(0);
    const status = JSON.parse(json.stdout);
    expect(status.history).toBe('read');
    expect(status.endpoints).toEqual([
      expect.objectContaining({
        businessId: 'ACME',
        name: 'main',
        history: expect.objectContaining({ enabled: false, disabledBy: 'operator' }),
      }),
    ]);
    const text = await runCli(['events', 'status', '--business', 'ACME'], { env });
    expect(text.stdout).toContain('ACME  main (127.0.0.1:9) (disabled by an operator)');
    expect(text.stdout).not.toContain('GLOBEX');

    const enabled = await runCli(['events', 'enable', '--endpoint', 'main', '--business', 'ACME'], {
      env,
    });
    expect(enabled, enabled.stderr).toMatchObject({ code: 0, stdout: 'enabled ACME main\n' });
    expect((await store.endpointStates({ businessId: 'ACME' }))[0]?.enabled).toBe(true);
  } finally {
    await store.close();
  }
}, 240_000); // six processes, each loading the CLI
