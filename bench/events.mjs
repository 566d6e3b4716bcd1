// npm run bench -- --only=events: webhook deliveries/s to a local receiver, the service's events
// consumer (dist/events, as `serve` runs it: signing, lanes, metrics, info logs to /dev/null)
// next to a bare baseline in the same run (amqplib consume → undici POST → ack, nothing else),
// with 1 and with 50 businesses. Events are queued first, then the clock runs until the
// receiver has every one (its clock: first to last event). Prints figures, no thresholds. Knob: BENCH_EVENTS (5000).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { connect } from 'amqplib';
import { Registry } from 'prom-client';
import { Agent, request } from 'undici';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 5000);
/** Both sides hold as many unacknowledged events as the service does by default (set in runEventsBench). */
let PREFETCH = 0;
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

/**
 * The receiver keeps the clock: from the first event it receives to the last, for both sides, so
 * neither side's connecting and declaring before it consumes counts as delivery time.
 */
async function startReceiver() {
  let count = 0;
  let firstAt = 0;
  let waiter;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(204).end();
      if (count === 0) firstAt = performance.now();
      count += 1;
      if (waiter && count >= waiter.n)
        waiter.resolve((count - 1) / ((performance.now() - firstAt) / 1000));
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    reset: () => {
      count = 0;
      firstAt = 0;
    },
    /** Resolves with the events per second once `n` have arrived. */
    reached: (n) => new Promise((resolve) => (waiter = { n, resolve })),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Queues `EVENTS` events round-robin over `businesses`, with confirms, before the clock starts. */
async function preload(channel, exchange, businesses) {
  for (let i = 0; i < EVENTS; i++) {
    const businessId = businesses[i % businesses.length];
    channel.publish(
      exchange,
      `sales-order.shipped.${businessId}`,
      Buffer.from('{"orderNumber":"SO-1","lines":3}'),
      {
        persistent: true,
        messageId: `bench-${i}-${randomBytes(4).toString('hex')}`,
        type: 'sales-order.shipped',
        timestamp: Math.floor(Date.now() / 1000),
        contentType: 'application/json',
        headers: { 'business-id': businessId },
      },
    );
  }
  await channel.waitForConfirms();
}

async function service(amqpUrl, receiver, businesses) {
  const { eventsSchema } = await import('../dist/events/config.js');
  const { createEventsConsumer } = await import('../dist/events/consumer.js');
  const { createEventsMetrics } = await import('../dist/events/metrics.js');
  const { resolveEndpoints } = await import('../dist/events/subscriptions.js');
  const { assertEventsTopology, eventsTopology } = await import('../dist/events/topology.js');
  const { createLogger, stdoutDestination } = await import('../dist/log.js');
  const suffix = randomBytes(3).toString('hex');
  const events = eventsSchema.parse({
    exchange: `bench.events.${suffix}`,
    queue: { name: `bench.events.${suffix}`, type: 'classic' },
  });
  const tenants = businesses.map((businessId) => ({
    businessId,
    webhooks: [
      {
        url: receiver.url,
        secret: { env: 'BENCH_SECRET' },
        events: ['**'],
        enabled: true,
        allowPrivateNetwork: false,
      },
    ],
  }));
  const endpoints = resolveEndpoints(
    { environment: 'development', tenants },
    { BENCH_SECRET: SECRET },
  );
  const connection = await connect(amqpUrl);
  const channel = await connection.createConfirmChannel();
  const topology = eventsTopology(events);
  await assertEventsTopology(channel, topology, 'classic');
  await preload(channel, topology.exchange, businesses);
  const consumer = createEventsConsumer(
    {
      url: amqpUrl,
      events,
      environment: 'development',
      endpoints,
      metrics: createEventsMetrics(new Registry(), businesses),
    },
    // The destination `serve` writes its stdout with (buffered, off the event loop), to /dev/null.
    createLogger({ level: 'info', destination: stdoutDestination({ dest: '/dev/null' }) }),
  );
  receiver.reset();
  const arrived = receiver.reached(EVENTS);
  await consumer.start();
  const perSecond = await arrived;
  await consumer.close();
  for (const queue of [topology.queue, topology.deadQueue, ...topology.retryQueues.values()])
    await channel.deleteQueue(queue);
  await channel.deleteExchange(topology.exchange);
  await connection.close();
  return perSecond;
}

async function baseline(amqpUrl, receiver, businesses) {
  const suffix = randomBytes(3).toString('hex');
  const exchange = `bench.baseline.${suffix}`;
  const queue = `bench.baseline.${suffix}`;
  const connection = await connect(amqpUrl);
  const channel = await connection.createConfirmChannel();
  await channel.assertExchange(exchange, 'topic', { durable: true });
  await channel.assertQueue(queue, { durable: true });
  await channel.bindQueue(queue, exchange, '#');
  await preload(channel, exchange, businesses);
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 64 });
  const consuming = await connection.createChannel();
  await consuming.prefetch(PREFETCH);
  receiver.reset();
  let acked = 0;
  let allAcked;
  const done = new Promise((resolve) => (allAcked = resolve));
  const arrived = receiver.reached(EVENTS);
  await consuming.consume(queue, async (message) => {
    const response = await request(receiver.url, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json' },
      body: message.content,
    });
    await response.body.dump();
    consuming.ack(message);
    if (++acked === EVENTS) allAcked();
  });
  const perSecond = await arrived;
  await done;
  await consuming.close();
  await channel.deleteQueue(queue);
  await channel.deleteExchange(exchange);
  await connection.close();
  await dispatcher.close();
  return perSecond;
}

export async function runEventsBench({ amqpUrl }) {
  const { eventsSchema } = await import('../dist/events/config.js');
  const defaults = eventsSchema.parse({});
  PREFETCH = defaults.prefetch;
  const receiver = await startReceiver();
  console.log(
    `\nevents: ${EVENTS} events per run, prefetch ${PREFETCH} both sides (the service's default), the service at ${defaults.concurrencyPerEndpoint} in flight per endpoint, receiver on loopback answering 204`,
  );
  console.log(
    `${'businesses'.padEnd(12)}${'baseline/s'.padStart(12)}${'service/s'.padStart(12)}${'ratio'.padStart(8)}`,
  );
  const figures = [];
  for (const count of [1, 50]) {
    const businesses = Array.from({ length: count }, (_, i) => `BENCH${i}`);
    // A first round of each side untimed (JIT, connection pools, the broker's queue processes
    // warming up: the first run was up to 40% slower than the third), then three alternated
    // rounds so neither side always runs on a warmer broker; the best of each is printed.
    await baseline(amqpUrl, receiver, businesses);
    await service(amqpUrl, receiver, businesses);
    const base = [];
    const mine = [];
    for (let round = 0; round < 3; round++) {
      base.push(await baseline(amqpUrl, receiver, businesses));
      mine.push(await service(amqpUrl, receiver, businesses));
    }
    const b = Math.max(...base);
    const s = Math.max(...mine);
    figures.push({
      businesses: count,
      baselinePerSecond: Math.round(b),
      servicePerSecond: Math.round(s),
      ratio: +(s / b).toFixed(2),
    });
    console.log(
      `${String(count).padEnd(12)}${String(Math.round(b)).padStart(12)}${String(Math.round(s)).padStart(12)}${(s / b).toFixed(2).padStart(8)}`,
    );
  }
  await receiver.close();
  return figures;
}
