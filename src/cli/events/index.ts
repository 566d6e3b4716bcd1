import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../config.js';
import { loadPipelines } from '../../drops/definition.js';
import { historyStore } from '../../history/index.js';
import { createLogger } from '../../log.js';
import { catalogProblem, emitEvent } from './emit.js';
import { replayDeadLetters } from './replay.js';
import { recoverCommand, resendCommand } from './resend-command.js';
import { eventsStatus, type EndpointStatus } from './status.js';
import { switchEndpoint, targetsOf } from './switch.js';
import { x12Unacknowledged } from './x12-unacknowledged.js';
import { CannotRead, parse, type Output } from '../check-commands.js';
import { UsageError } from '../help.js';
import { createProgress, type ProgressStreams } from '../progress.js';
import { parseSince } from '../reprocess.js';

const EVENT_TYPE = /^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$/i;

/** `events emit`: publishes one event as the warehouse would and prints its id (exit 0 once confirmed). */
async function emit(args: string[], io: Output): Promise<number> {
  const { values } = parse('events', () =>
    parseArgs({
      args,
      options: {
        business: { type: 'string' },
        type: { type: 'string' },
        data: { type: 'string' },
        id: { type: 'string' },
        'correlation-id': { type: 'string' },
      },
      strict: true,
    }),
  );
  if (!values.business) throw new UsageError('events emit needs --business', 'events');
  if (!values.type || !EVENT_TYPE.test(values.type))
    throw new UsageError(
      'events emit needs --type <kind.action>, e.g. sales-order.shipped',
      'events',
    );
  let data: unknown = {};
  if (values.data) {
    try {
      data = JSON.parse(readFileSync(values.data, 'utf8'));
    } catch (error) {
      throw new CannotRead(`${values.data}: ${(error as Error).message.split('\n')[0]}`);
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data))
      throw new CannotRead(`${values.data}: expected a JSON object (the event's data)`);
  }
  // Before the configuration and the broker: an event the catalog refuses is never published.
  const problem = catalogProblem(values.type, data);
  if (problem) throw new UsageError(problem, 'events');
  const config = loadConfig();
  if (!config.broker.url)
    throw new UsageError('events emit needs a broker: set AMQP_URL', 'events');
  if (!config.tenants.some((tenant) => tenant.businessId === values.business))
    io.err(
      `warning: no tenant has business id "${values.business}"; a worker will dead-letter the event (unknown-business)\n`,
    );
  const { id } = await emitEvent({
    url: config.broker.url,
    events: config.events,
    businessId: values.business,
    type: values.type,
    data: data as Record<string, unknown>,
    ...(values.id ? { id: values.id } : {}),
    ...(values['correlation-id'] ? { correlationId: values['correlation-id'] } : {}),
  });
  io.out(`${id}\n`);
  return 0;
}

/** `events replay`: dead letters back to the delivery queue; one line each, a bar on a terminal. */
async function replay(args: string[], io: Output, streams: ProgressStreams): Promise<number> {
  const { values } = parse('events', () =>
    parseArgs({
      args,
      options: {
        business: { type: 'string' },
        id: { type: 'string' },
        since: { type: 'string' },
        force: { type: 'boolean' },
      },
      strict: true,
    }),
  );
  const since = values.since === undefined ? undefined : parseSince(values.since, Date.now());
  const config = loadConfig();
  if (!config.broker.url)
    throw new UsageError('events replay needs a broker: set AMQP_URL', 'events');
  let progress: ReturnType<typeof createProgress> | undefined;
  const { replayed, heldBack } = await replayDeadLetters({
    url: config.broker.url,
    events: config.events,
    force: values.force === true,
    selection: {
      ...(values.business ? { businessId: values.business } : {}),
      ...(values.id ? { id: values.id } : {}),
      ...(since !== undefined ? { since } : {}),
    },
    onReplayed: (event, done, total) => {
      progress ??= createProgress(total, streams);
      progress.line(`${event.id} ${event.type} ${event.businessId} (was ${event.reason})`);
      progress.update(done, event.id);
    },
  });
  progress?.end();
  io.err(`replayed ${replayed.length} event(s) from ${config.events.queue.name}.dead\n`);
  for (const held of heldBack)
    io.err(
      `held back ${held.events} event(s) of ${held.businessId}'s endpoint ${held.endpoint}: ${held.why}; replay them once it is back, or with --force\n`,
    );
  return 0;
}

/** The history the configuration names, not opened; undefined when it is off (or in the sandbox). */
function configuredHistory(config: ReturnType<typeof loadConfig>) {
  return config.environment !== 'sandbox' && config.history.enabled
    ? historyStore(config, createLogger({ level: 'silent' }))
    : undefined;
}

/** `events disable` / `events enable`: one endpoint, in every running worker at once, and in the history. */
async function switchCommand(
  action: 'disable' | 'enable',
  args: string[],
  io: Output,
): Promise<number> {
  const { values } = parse('events', () =>
    parseArgs({
      args,
      options: { endpoint: { type: 'string' }, business: { type: 'string' } },
      strict: true,
    }),
  );
  if (!values.endpoint)
    throw new UsageError(
      `events ${action} needs --endpoint <id|url> (or file:<pipeline>)`,
      'events',
    );
  const config = loadConfig();
  if (!config.broker.url)
    throw new UsageError(`events ${action} needs a broker: set AMQP_URL`, 'events');
  const outbound = loadPipelines(path.resolve(config.pipelinesDirectory));
  const targets = targetsOf({
    tenants: config.tenants,
    outbound,
    endpoint: values.endpoint,
    ...(values.business !== undefined && { businessId: values.business }),
  });
  if (targets.length === 0)
    throw new UsageError(
      `no configured endpoint is named ${JSON.stringify(values.endpoint)}${values.business ? ` in business ${values.business}` : ''}`,
      'events',
    );
  const businesses = new Set(targets.map((t) => t.businessId));
  if (businesses.size > 1)
    throw new UsageError(
      `${JSON.stringify(values.endpoint)} names an endpoint of several businesses (${[...businesses].join(', ')}): add --business`,
      'events',
    );
  const history = configuredHistory(config);
  const { history: kept } = await switchEndpoint(
    {
      url: config.broker.url,
      events: config.events,
      tenants: config.tenants,
      outbound,
      action,
      endpoint: values.endpoint,
      ...(history && { history }),
    },
    targets,
  );
  for (const target of targets) io.out(`${action}d ${target.businessId} ${target.endpoint}\n`);
  if (typeof kept === 'object')
    io.err(
      `warning: the history could not be written (${kept.unavailable}); running workers that have this endpoint keep the decision there\n`,
    );
  return 0;
}

/** The history's lines of an endpoint in `events status`. */
function historyLines(e: EndpointStatus): string[] {
  if (!e.history) return [];
  const h = e.history;
  const lines = [`    history: ${h.delivered} delivered, ${h.failed} failed attempt(s)`];
  if (h.failingSince && h.enabled) lines.push(`    failing since ${h.failingSince} (history)`);
  for (const a of h.lastAttempts)
    lines.push(
      `    ${a.at} ${a.end}${a.status === undefined ? '' : ` ${a.status}`} in ${a.durationMs} ms${a.error ? `: ${a.error}` : ''}`,
    );
  return lines;
}

/** How an endpoint's line says it is disabled: in the configuration, by an operator, after a 410. */
function disabledNote(e: EndpointStatus): string {
  if (!e.enabled) return ' (disabled)';
  if (e.history && !e.history.enabled)
    return e.history.disabledBy === 'operator'
      ? ' (disabled by an operator)'
      : ' (disabled after 410)';
  return e.disabledByWorker ? ' (disabled after 410)' : '';
}

/** `events status`: per business and endpoint, what waits for a retry and what is dead, from the broker. */
async function status(args: string[], io: Output): Promise<number> {
  const { values } = parse('events', () =>
    parseArgs({
      args,
      options: { business: { type: 'string' }, json: { type: 'boolean' } },
      strict: true,
    }),
  );
  const config = loadConfig();
  if (!config.broker.url)
    throw new UsageError('events status needs a broker: set AMQP_URL', 'events');
  const history = configuredHistory(config);
  const report = await eventsStatus({
    url: config.broker.url,
    events: config.events,
    tenants: config.tenants,
    outbound: loadPipelines(path.resolve(config.pipelinesDirectory)),
    ...(history && { history }),
    ...(values.business !== undefined && { businessId: values.business }),
  });
  const endpoints = report.endpoints.filter(
    (e) => values.business === undefined || e.businessId === values.business,
  );
  if (values.json) {
    io.out(`${JSON.stringify({ ...report, endpoints })}\n`);
    return 0;
  }
  io.out(
    `waiting in ${config.events.queue.name}: ${report.waiting}; ${report.workers} worker(s) reporting\n`,
  );
  if (typeof report.history === 'object')
    io.out(`history: could not be read (${report.history.unavailable}); workers' reports only\n`);
  for (const e of endpoints) {
    const state = disabledNote(e);
    // The name `events disable` takes, when the label does not start with it (an endpoint without an id).
    const named = e.name && !e.endpoint.startsWith(`${e.name} `) ? ` [${e.name}]` : '';
    const next = e.nextAttemptAt ? `, next attempt ${e.nextAttemptAt}` : '';
    io.out(
      `${e.businessId}  ${e.endpoint}${named}${state}: ${e.delivered} delivered, ${e.retrying} retrying${next}, ${e.dead} dead\n`,
    );
    if (e.failingSince) {
      const off = e.backedOffUntil
        ? `, backed off until ${e.backedOffUntil}`
        : e.probing
          ? ', being probed'
          : '';
      io.out(`    failing since ${e.failingSince}${off}\n`);
    }
    if (e.lastFailure)
      io.out(`    last failure${e.lastFailureAt ? ` ${e.lastFailureAt}` : ''}: ${e.lastFailure}\n`);
    for (const line of historyLines(e)) io.out(`${line}\n`);
  }
  const malformed = Object.entries(report.malformed);
  if (malformed.length > 0)
    io.out(`malformed (dead-lettered): ${malformed.map(([r, n]) => `${n} ${r}`).join(', ')}\n`);
  return 0;
}

export async function eventsCommand(
  args: string[],
  io: Output,
  streams: ProgressStreams,
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'emit') return emit(rest, io);
  if (sub === 'replay') return replay(rest, io, streams);
  if (sub === 'status') return status(rest, io);
  if (sub === 'resend') return resendCommand(rest, io);
  if (sub === 'recover') return recoverCommand(rest, io, streams);
  if (sub === 'disable' || sub === 'enable') return switchCommand(sub, rest, io);
  if (sub === 'x12-unacknowledged') return x12Unacknowledged(rest, io);
  throw new UsageError(
    sub
      ? `unknown events command "${sub}"`
      : 'events needs a command: emit, status, replay, resend, recover, disable, enable or x12-unacknowledged',
    'events',
  );
}
