import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { openDrops, type OpenedDrop } from '../drops/open.js';
import type { InputState } from '../drops/state/input-state.js';
import { INPUT_STATUSES, type InputStatus } from '../vocabulary.js';
import { checkDrop, settleFolders } from '../drops/layout.js';
import { listStates } from '../drops/state/persist.js';
import { inputNames } from '../drops/upload-ready.js';
import { unusableName } from '../drops/unusable-names.js';
import { pipelinesFolderState } from '../start-up.js';
import { parse, type Output } from './check-commands.js';
import { serviceBrokerNode } from './healthcheck.js';
import { UsageError } from './help.js';

/** What `status` reports for one pipeline (also its `--json` shape). */
export interface PipelineStatus {
  pipeline: string;
  source: string;
  inputs: number;
  byStatus: Record<InputStatus, number>;
  /** The latest inputs whose last try failed (failed, retry-scheduled, dead), newest first. */
  lastFailures: Array<
    Pick<
      InputState,
      | 'file'
      | 'status'
      | 'attempts'
      | 'lastError'
      | 'updatedAt'
      | 'nextAttemptAt'
      | 'location'
      | 'receipt'
      | 'sha256'
    >
  >;
  /** Files in the drop whose names the worker cannot use (JSON-escaped in the text output), and why. */
  unusableNames: Array<{ name: string; reason: string }>;
  /** Set when the drop could not be read. */
  error?: string;
}

const FAILING: readonly InputStatus[] = ['failed', 'retry-scheduled', 'dead'];

/**
 * `status`: inputs per state and the last failures with their reasons, read from each drop's
 * durable state (nothing is changed, nothing connects to the broker), then — with a broker
 * configured — the node the running service on this host publishes through, asked of its admin
 * listener's `/readyz`. Exit 1 when a drop could not be read.
 */
export async function statusCommand(args: string[], io: Output): Promise<number> {
  const options = {
    pipeline: { type: 'string' },
    failures: { type: 'string' },
    json: { type: 'boolean' },
  } as const;
  const { values, positionals } = parse('status', () =>
    parseArgs({ args, options, allowPositionals: true, strict: true }),
  );
  if (positionals.length > 0)
    throw new UsageError(
      `status takes no arguments; got ${JSON.stringify(positionals[0])}`,
      'status',
    );
  const failures = values.failures === undefined ? 10 : Number(values.failures);
  if (!Number.isInteger(failures) || failures < 0)
    throw new UsageError('--failures must be a whole number, 0 or more', 'status');

  const config = loadConfig({ brokerRequired: false });
  const drops = openDrops(config);
  try {
    if (drops.length === 0) {
      const folder = pipelinesFolderState(config);
      const why =
        folder === 'present'
          ? 'has no *.yaml pipeline'
          : folder === 'missing'
            ? 'does not exist'
            : 'is not a folder';
      io.out(values.json ? '[]\n' : `no pipelines: ${config.pipelinesDirectory} ${why}\n`);
      return folder === 'present' ? 0 : 1;
    }
    const chosen =
      values.pipeline === undefined
        ? drops
        : drops.filter(({ pipeline }) => pipeline.name === values.pipeline);
    if (values.pipeline !== undefined && chosen.length === 0) {
      throw new UsageError(
        `no pipeline named "${values.pipeline}" (there are: ${drops.map((d) => d.pipeline.name).join(', ') || 'none'})`,
        'status',
      );
    }
    const report = await Promise.all(chosen.map((drop) => statusOf(drop, failures)));
    io.out(values.json ? `${JSON.stringify(report, null, 2)}\n` : report.map(describe).join('\n'));
    if (!values.json && config.broker.url && config.admin.port !== 0)
      io.out(brokerLine(await serviceBrokerNode(config.admin, 1000)));
    return report.some((r) => r.error !== undefined) ? 1 : 0;
  } finally {
    await Promise.all(drops.map(({ store }) => store.close().catch(() => undefined)));
  }
}

export async function statusOf(
  { pipeline, store }: OpenedDrop,
  failures: number,
): Promise<PipelineStatus> {
  const byStatus = Object.fromEntries(INPUT_STATUSES.map((s) => [s, 0])) as Record<
    InputStatus,
    number
  >;
  const base = { pipeline: pipeline.name, source: `${store.type}:${store.where}` };
  let states: InputState[];
  let unusableNames: PipelineStatus['unusableNames'];
  try {
    await checkDrop(store, settleFolders(pipeline));
    states = await listStates(store);
    unusableNames = await unusableNamesIn({ pipeline, store });
  } catch (error) {
    return {
      ...base,
      inputs: 0,
      byStatus,
      lastFailures: [],
      unusableNames: [],
      error: (error as Error).message,
    };
  }
  for (const state of states) if (state.status in byStatus) byStatus[state.status] += 1;
  const lastFailures = states
    .filter((s) => FAILING.includes(s.status))
    .sort((a, b) => (b.updatedAt ?? '').localeCompare(a.updatedAt ?? ''))
    .slice(0, failures)
    .map(
      ({
        file,
        status,
        attempts,
        lastError,
        updatedAt,
        nextAttemptAt,
        location,
        receipt,
        sha256,
      }) => ({
        file,
        status,
        attempts,
        lastError,
        updatedAt,
        nextAttemptAt,
        location,
        receipt,
        sha256,
      }),
    );
  return { ...base, inputs: states.length, byStatus, lastFailures, unusableNames };
}

/** The drop's inputs whose names cannot be used, as the worker judges them (its claim names take a host name and pid). */
async function unusableNamesIn({
  pipeline,
  store,
}: OpenedDrop): Promise<PipelineStatus['unusableNames']> {
  const isInput = inputNames(pipeline);
  const workerId = `${hostname()}-${process.pid}`;
  return (await store.list()).flatMap(({ name }) => {
    const unusable = isInput(name)
      ? unusableName(name, { workerId, claims: store.atomicRename })
      : undefined;
    return unusable ? [{ name, reason: unusable.reason }] : [];
  });
}

/** Which broker node the service on this host publishes through (a cluster has several). */
function brokerLine(answer: Awaited<ReturnType<typeof serviceBrokerNode>>): string {
  return 'node' in answer
    ? `broker: the service publishes through node ${answer.node}\n`
    : `broker: node unknown (${answer.unknown})\n`;
}

function describe(status: PipelineStatus): string {
  const lines = [
    `${status.pipeline} (${status.source}): ${status.error ? `cannot read the drop: ${status.error}` : `${status.inputs} input(s)`}`,
  ];
  if (status.error) return `${lines[0]}\n`;
  lines.push(`  ${INPUT_STATUSES.map((s) => `${s} ${status.byStatus[s]}`).join('  ')}`);
  if (status.lastFailures.length > 0) lines.push('  last failures, newest first:');
  for (const f of status.lastFailures) {
    const next =
      f.status === 'retry-scheduled' && f.nextAttemptAt ? `, next try ${f.nextAttemptAt}` : '';
    lines.push(
      `    ${f.updatedAt ?? '?'}  ${f.status.padEnd(15)} ${f.location ?? f.file}  (attempts ${f.attempts}${next})`,
    );
    lines.push(`      ${(f.lastError ?? 'no reason recorded').replace(/\s+/g, ' ').slice(0, 300)}`);
  }
  if (status.unusableNames.length > 0)
    lines.push('  files whose names cannot be used (left in the drop; rename them):');
  for (const { name, reason } of status.unusableNames)
    lines.push(`    ${JSON.stringify(name)}: ${reason}`);
  return `${lines.join('\n')}\n`;
}
