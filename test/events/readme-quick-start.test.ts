import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { connect } from 'amqplib';
import { afterAll, expect, it } from 'vitest';
import { eventsSchema } from '../../src/events/config.js';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { cliEntry } from '../support/cli-entry.js';
import { deleteEventsTopology } from '../support/events-harness.js';
import { tempFolder } from '../support/temp.js';

/**
 * The README's events example, run as written by bash — receiver, configuration, worker, `events
 * emit` — with only what keeps it from colliding with other tests changed: its own port and
 * queue, its files in a temporary folder, and the run's compiled CLI (`test/support/cli-entry.ts`) instead of `npm run build`.
 */

const ROOT = new URL('../../', import.meta.url).pathname;
const temp = tempFolder('events-quick-start-');

function readmeBlock(): string {
  const readme = readFileSync(`${ROOT}README.md`, 'utf8');
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((match) => match[1]!);
  const block = blocks.find((b) => b.includes('events emit'));
  if (!block) throw new Error('The README has no events emit example');
  return block;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const events = eventsSchema.parse({
  exchange: uniqueName('quick-start.x'),
  queue: { name: uniqueName('quick-start.q') },
});
afterAll(async () => {
  const connection = await connect(AMQP_URL);
  await deleteEventsTopology(await connection.createChannel(), events);
  await connection.close();
});

it("the README's events example delivers the emitted event to its receiver", async () => {
  const port = await freePort();
  const block = readmeBlock();
  expect(block).toContain('npm run build');
  const script = block
    .replace('npm run build\n', '')
    .replaceAll('node dist/cli.js', `node ${cliEntry()}`)
    .replaceAll('9000', String(port))
    .replaceAll('events.yaml', `${temp.dir}/events.yaml`)
    .replace(
      /(cat > \S+ <<EOF\n)/,
      `$1dataDirectory: ${temp.dir}/data\npipelinesDirectory: ${temp.dir}/pipelines\nevents: { exchange: ${events.exchange}, queue: { name: ${events.queue.name} } }\n`,
    );
  const child = spawn('bash', ['-e', '-c', script], {
    cwd: ROOT,
    detached: true, // its own process group: the background receiver and worker end with it
    env: { ...process.env, PORT: '0', ADMIN_PORT: '0', LOG_LEVEL: 'warn' },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    await expect
      .poll(
        () => {
          const id = /^([0-9a-f-]{36})$/m.exec(output)?.[1];
          return id ? new RegExp(`^${id} (.*)$`, 'm').exec(output)?.[1] : undefined;
        },
        { timeout: 80_000, interval: 200 },
      )
      .toBeDefined();
    const id = /^([0-9a-f-]{36})$/m.exec(output)![1]!;
    const body = JSON.parse(new RegExp(`^${id} (.*)$`, 'm').exec(output)![1]!);
    expect(body).toMatchObject({
      type: 'sales-order.shipped',
      businessId: 'ACME',
      data: JSON.parse(readFileSync(`${ROOT}fixtures/demo/sales-order-shipped.json`, 'utf8')),
    });
  } catch (error) {
    console.error(output);
    throw error;
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
  }
}, 90_000);
