import net from 'node:net';

/**
 * The suite talks to real services; `npm test` starts them first (scripts/ensure-services.sh).
 * When one is missing anyway, fail loudly here instead of letting tests skip or hang.
 */
export default async function checkServices(): Promise<void> {
  const amqpUrl = new URL(process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672');
  const port = Number(amqpUrl.port || 5672);
  const reachable = await new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: amqpUrl.hostname, port });
    socket.setTimeout(3000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
  if (!reachable) {
    throw new Error(
      `RabbitMQ is not reachable at ${amqpUrl.hostname}:${port}. Run the tests with \`npm test\` (it starts it), or start it with \`rabbitmq-server -detached\`.`,
    );
  }
}
