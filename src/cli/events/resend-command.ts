/**
 * `events resend` and `events recover`: events read back from the history and published to the
 * delivery queue again (resend.ts). Without `--business` both act in the operator's scope, every
 * business's history, and say so on stderr.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../config.js';
import type { EventEntry } from '../../history/store.js';
import { parse, type Output } from '../check-commands.js';
import { UsageError } from '../help.js';
import { createProgress, type ProgressStreams } from '../progress.js';
import { parseSince } from '../reprocess.js';
import { endpointTargets, withHistory, type EndpointTarget } from './from-history.js';
import { parkedFor } from './parked.js';
import { resendEvents, type Resend } from './resend.js';

const OPERATOR_SCOPE =
  "operator scope: every business's history (--business limits it to one business)\n";

function brokerConfig(command: string) {
  const config = loadConfig();
  if (!config.broker.url)
    throw new UsageError(`events ${command} needs a broker: set AMQP_URL`, 'events');
  return { config, url: config.broker.url };
}

const occurred = (event: EventEntry) => (event.occurredAt ?? event.receivedAt).toISOString();

/**
 * `events resend --id <id> [--endpoint <id|url>] [--business <id>]`: one event from the history
 * to the delivery queue again, delivered or dead. Exit 0 once the broker confirmed it, 1 when
 * the history has no such event (or broker trouble), 2 usage error or the history unreadable.
 */
export async function resendCommand(args: string[], io: Output): Promise<number> {
  const { values } = parse('events', () =>
    parseArgs({
      args,
      options: {
        id: { type: 'string' },
        endpoint: { type: 'string' },
        business: { type: 'string' },
      },
      strict: true,
    }),
  );
  if (!values.id) throw new UsageError('events resend needs --id <event id>', 'events');
  if (values.business === '') throw new UsageError('--business must not be empty', 'events');
  const { config, url } = brokerConfig('resend');
  const scope = values.business ? { businessId: values.business } : ({ operator: true } as const);
  if (!values.business) io.err(OPERATOR_SCOPE);
  const event = await withHistory(config, 'resend', (store) => store.event(scope, values.id!));
  if (!event) {
    io.err(
      `warehouse-ingest: no event ${JSON.stringify(values.id)} in the history${values.business ? ` of ${values.business}` : ''} (events are kept history.retentionDays.events days)\n`,
    );
    return 1;
  }
  const target =
    values.endpoint === undefined
      ? undefined
      : endpointTargets(config.tenants, values.endpoint, event.businessId)[0]!;
  await resendEvents({
    url,
    events: config.events,
    resends: [{ event, ...(target && { endpoint: target.header }) }],
  });
  io.out(`${event.id}\n`);
  io.err(
    `resent ${event.id} (${event.type}, ${event.businessId}, occurred ${occurred(event)}) to ${target ? `endpoint ${target.label}` : 'every endpoint subscribed to it now'}\n`,
  );
  return 0;
}

/**
 * `events recover --endpoint <id|url> --since <time|duration> [--business <id>] [--dry-run]`:
 * every event whose attempts at that endpoint since then all failed, resent to that endpoint
 * alone, oldest first; those still parked for a retry there are left to it. Exit 0 done (or nothing to do), 1 broker trouble, 2 usage error or the
 * history unreadable.
 */
export async function recoverCommand(
  args: string[],
  io: Output,
  streams: ProgressStreams,
): Promise<number> {
  const { values } = parse('events', () =>
    parseArgs({
      args,
      options: {
        endpoint: { type: 'string' },
        since: { type: 'string' },
        business: { type: 'string' },
        'dry-run': { type: 'boolean' },
      },
      strict: true,
    }),
  );
  if (!values.endpoint)
    throw new UsageError('events recover needs --endpoint <endpoint id or URL>', 'events');
  if (!values.since)
    throw new UsageError(
      'events recover needs --since <ISO 8601 time or duration (2h, 7d)>',
      'events',
    );
  if (values.business === '') throw new UsageError('--business must not be empty', 'events');
  const since = new Date(sinceOf(values.since));
  const { config, url } = brokerConfig('recover');
  const targets = endpointTargets(config.tenants, values.endpoint, values.business);
  if (!values.business)
    io.err(
      `${OPERATOR_SCOPE.trimEnd()}; the endpoint of ${targets.map((t) => `${t.businessId} (${t.label})`).join(', ')}\n`,
    );
  // One query per business: an endpoint's names, and the id it is targeted by, are its business's.
  const undelivered = await withHistory(config, 'recover', async (store) => {
    const found: Resend[] = [];
    for (const target of targets)
      for (const event of await store.undeliveredSince(
        { businessId: target.businessId },
        target.names,
        since,
      ))
        found.push({ event, endpoint: target.header });
    return found.sort(
      (a, b) =>
        occurred(a.event).localeCompare(occurred(b.event)) || a.event.id.localeCompare(b.event.id),
    );
  });
  const where = describe(targets);
  const parked = await parkedFor({
    url,
    events: config.events,
    endpoints: new Set(targets.map((target) => target.header)),
  });
  const resends = undelivered.filter(({ event }) => !parked.has(event.id));
  if (resends.length < undelivered.length)
    io.err(
      `left ${undelivered.length - resends.length} event(s) to their retry schedule at ${where}: a worker tries them again (events status shows when)\n`,
    );
  const line = ({ event }: Resend) =>
    `${event.id}\t${event.type}\t${event.businessId}\toccurred ${occurred(event)}`;
  if (values['dry-run']) {
    io.out(
      `${resends.length} event(s) would be resent to ${where} (not delivered there since ${since.toISOString()})${resends.length ? ':' : ''}\n`,
    );
    for (const resend of resends) io.out(`${line(resend)}\n`);
    return 0;
  }
  const progress = createProgress(resends.length, streams);
  await resendEvents({
    url,
    events: config.events,
    resends,
    onResent: (resend, done) => {
      progress.line(line(resend));
      progress.update(done, resend.event.id);
    },
  });
  progress.end();
  io.err(
    `resent ${resends.length} event(s) to ${where}: not delivered there since ${since.toISOString()}\n`,
  );
  return 0;
}

/** By label (an id, or a host): never the URL's path or query, which may hold a token. */
function describe(targets: readonly EndpointTarget[]): string {
  const [only] = targets;
  return targets.length === 1 && only
    ? `${only.businessId}'s endpoint ${only.label}`
    : `the endpoints of ${targets.length} businesses`;
}

/** A duration back from now or an ISO 8601 time, as `reprocess` and `events replay` take it. */
function sinceOf(text: string): number {
  try {
    return parseSince(text, Date.now());
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(error.message, 'events');
    throw error;
  }
}
