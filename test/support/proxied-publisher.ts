import type { Logger } from '../../src/log.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../src/publish/index.js';
import { AMQP_URL } from './broker.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/**
 * A started publisher whose broker connection runs through a TCP proxy, so a test can cut the
 * broker away (`proxy.cut`) and bring it back; it reconnects fast. `close` stops both.
 */
export async function startProxiedPublisher(
  exchange: string,
  log: Logger,
): Promise<{ proxy: TcpProxy; publisher: RabbitMqPublisher; close(): Promise<void> }> {
  const amqp = new URL(AMQP_URL);
  const proxy = await startTcpProxy({ host: amqp.hostname, port: Number(amqp.port || 5672) });
  const publisher = createRabbitMqPublisher(
    {
      url: proxy.urlFor(AMQP_URL),
      exchange,
      queues: [],
      publishTimeoutMs: 15_000,
      reconnect: { initialDelayMs: 50, maxDelayMs: 300 },
    },
    log,
  );
  await publisher.start();
  return {
    proxy,
    publisher,
    close: async () => {
      await publisher.close();
      await proxy.close();
    },
  };
}
