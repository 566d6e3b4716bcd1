import type { Config } from '../config.js';
import { settleFolders } from '../drops/layout.js';
import type { OpenedDrop } from '../drops/open.js';
import { probeDrops } from '../drops/probe.js';
import type { HistoryWriter } from '../history/writer.js';
import type { SharedState } from '../http-state/state.js';
import { compileRoutingKey, templateFields, topicMatches } from '../ingest/route.js';
import type { Publisher } from '../publish/publisher.js';
import type { RabbitMqPublisher } from '../publish/rabbitmq.js';
import { KIND_NAMES } from '../records/kind.js';
import type { Readiness } from './admin.js';

/**
 * What `/readyz` asks: whether this instance can serve its own traffic. Not ready while its
 * publisher cannot publish, a kind's routing key reaches no declared queue, or its shared state
 * (Redis) was never reached since start-up. A partner's drop that cannot be listed is that
 * partner's outage, not this instance's: it is reported in the body (`drops`), the log and the
 * metrics, and the instance stays in the load balancer (docs/decisions.md).
 */
export interface ReadinessParts {
  readonly config: Readonly<Config>;
  readonly publisher: Publisher;
  readonly drops: readonly OpenedDrop[];
  readonly sharedState: SharedState;
  readonly history?: HistoryWriter;
}

export function readinessCheck(parts: ReadinessParts): () => Promise<Readiness> {
  const { config, publisher, drops, sharedState, history } = parts;
  return async () => {
    const [publisherCheck, dropChecks] = await Promise.all([
      publisher.readiness(),
      probeDrops(
        drops.map(({ pipeline, store }) => ({
          pipeline: pipeline.name,
          store,
          settleFolders: settleFolders(pipeline),
        })),
      ),
    ]);
    const problems = [...routeProblems(config, publisher)];
    if (!sharedState.reachedOnce)
      problems.push(
        'shared state: not reached since start-up (the reasons are in the service log)',
      );
    return {
      ready: publisherCheck.ready && problems.length === 0,
      publisherProblems: publisherCheck.ready ? [] : publisherCheck.problems,
      ...(publisher.name === 'rabbitmq' && brokerFacts(publisher as RabbitMqPublisher)),
      problems,
      drops: dropChecks,
      ...(sharedState.kind === 'redis' && { sharedState: { reachable: sharedState.reachable } }),
      ...(history && {
        history: {
          reachable: history.reachable !== false,
          ...(history.health && { writes: history.health }),
          pendingRows: history.pendingRows,
        },
      }),
    };
  };
}

function brokerFacts(publisher: RabbitMqPublisher): Pick<Readiness, 'broker' | 'brokerNode'> {
  const node = publisher.node;
  return {
    broker: publisher.connected ? 'reachable' : 'unreachable',
    ...(node !== undefined && { brokerNode: node }),
  };
}

/**
 * For RabbitMQ, every kind of every tenant must have a routing key that some declared binding
 * matches. Templates that use record fields are checked per record at publish time instead (an
 * unroutable record fails its batch with 503).
 */
function routeProblems(config: Readonly<Config>, publisher: Publisher): string[] {
  if (publisher.name !== 'rabbitmq' || templateFields(config.broker.routingKey).length > 0)
    return [];
  const routingKeyFor = compileRoutingKey(config.broker.routingKey);
  const bindings = config.broker.queues.flatMap((q) => q.bindingKeys);
  const problems: string[] = [];
  for (const tenant of config.tenants) {
    for (const kind of KIND_NAMES) {
      const key = routingKeyFor(kind, tenant.businessId, {});
      if (!bindings.some((binding) => topicMatches(binding, key)))
        problems.push(`routing key "${key}" reaches no declared queue`);
    }
  }
  return problems;
}
