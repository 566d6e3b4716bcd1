import { acceptsConnections } from '../support/tcp-probe.js';

/**
 * The suite talks to real services; `npm test` starts them first (scripts/ensure-services.sh).
 * When one is missing anyway, fail loudly here instead of letting tests skip or hang.
 */
export default async function checkServices(): Promise<void> {
  const amqpUrl = new URL(process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672');
  const redisUrl = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
  const postgresUrl = new URL(
    process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432',
  );
  const services = [
    {
      name: 'RabbitMQ',
      host: amqpUrl.hostname,
      port: Number(amqpUrl.port || 5672),
      start: '`rabbitmq-server -detached`',
    },
    {
      name: 'Redis',
      host: redisUrl.hostname,
      port: Number(redisUrl.port || 6379),
      start: "`redis-server --daemonize yes --bind 127.0.0.1 --save ''`",
    },
    {
      name: 'PostgreSQL',
      host: postgresUrl.hostname,
      port: Number(postgresUrl.port || 5432),
      start: '`pg_ctlcluster 15 main start` (trust auth for 127.0.0.1)',
    },
  ];
  for (const service of services) {
    if (!(await acceptsConnections(service.port, { host: service.host, timeoutMs: 3000 }))) {
      throw new Error(
        `${service.name} is not reachable at ${service.host}:${service.port}. Run the tests with \`npm test\` (it starts it), or start it with ${service.start}.`,
      );
    }
  }
}
