// The bench's own broker topology: a durable topic exchange and one durable queue bound with `#`,
// declared exactly as the service declares them (plain `durable: true`, no arguments — the
// service's assertQueue would fail with 406 PRECONDITION_FAILED on any x-argument). The queue is
// kept bounded by a `max-length` policy when rabbitmqctl is at hand, and purged between runs in
// any case, so every measurement starts from an empty queue.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { connect } from 'amqplib';

export const EXCHANGE = 'warehouse-ingest.bench';
export const QUEUE = 'warehouse-ingest.bench.records';
const POLICY = 'warehouse-ingest-bench';
const MAX_LENGTH = 50_000;
const run = promisify(execFile);

export function safeUrl(url) {
  const parsed = new URL(url);
  if (parsed.username) parsed.username = '***';
  parsed.password = '';
  return parsed.toString();
}

/** Connects or exits with one line saying why. */
export async function openBroker(url) {
  let connection;
  try {
    connection = await connect(url, { timeout: 3000 });
  } catch (error) {
    const reason = String(error?.message || error?.code || error).split('\n')[0];
    console.error(
      `bench: cannot connect to RabbitMQ at ${safeUrl(url)}: ${reason} (start it with bash scripts/ensure-services.sh, or set AMQP_URL)`,
    );
    process.exit(1);
  }
  connection.on('error', () => {});
  const channel = await connection.createChannel();
  channel.on('error', () => {});
  const version = String(connection.connection.serverProperties?.version ?? '?');

  return {
    version,
    async declare() {
      await channel.deleteQueue(QUEUE).catch(() => {}); // leftovers of an interrupted run
      await channel.assertExchange(EXCHANGE, 'topic', { durable: true });
      await channel.assertQueue(QUEUE, { durable: true });
      await channel.bindQueue(QUEUE, EXCHANGE, '#');
      return boundByPolicy(url);
    },
    purge: () => channel.purgeQueue(QUEUE),
    async remove() {
      await channel.deleteQueue(QUEUE).catch(() => {});
      await channel.deleteExchange(EXCHANGE).catch(() => {});
      await run('rabbitmqctl', ['clear_policy', POLICY], { timeout: 5000 }).catch(() => {});
      await connection.close().catch(() => {});
    },
  };
}

/** Best effort: only a broker on this machine can be given a policy through rabbitmqctl. */
async function boundByPolicy(url) {
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) return false;
  const definition = JSON.stringify({ 'max-length': MAX_LENGTH, overflow: 'drop-head' });
  const pattern = `^${QUEUE.replaceAll('.', '\\.')}$`;
  try {
    await run('rabbitmqctl', ['set_policy', '--apply-to', 'queues', POLICY, pattern, definition], {
      timeout: 5000,
    });
    return `policy max-length ${MAX_LENGTH}, drop-head`;
  } catch {
    return false;
  }
}
