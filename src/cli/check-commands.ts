import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../config.js';
import { readPortalSecret } from '../portal/secret.js';
import { ConfigError } from '../operator-errors.js';
import { checkDrop, settleFolders } from '../drops/layout.js';
import type { OpenedDrop } from '../drops/open.js';
import { DropMisconfigured } from '../operator-errors.js';
import { openCheckedDrops, pipelinesFolderState } from '../start-up.js';
import { kindByName, KIND_NAMES } from '../records/index.js';
import { UsageError } from './help.js';
import { type FileVerdict, validateFile } from './validate.js';

const FORMATS = ['v2-json', 'v1-json', 'v1-csv', 'x12'] as const;

/** Where a command writes; tests of these commands run the real process, so this is stdout/stderr. */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/** Parses strictly: an unknown or malformed option is a usage error naming it, not a stack trace. */
export function parse<T>(command: string, parseThem: () => T): T {
  try {
    return parseThem();
  } catch (error) {
    throw new UsageError(
      (error as Error).message
        .split('\n')[0]!
        .replace(/\. To specify a positional argument.*$/, ''),
      command,
    );
  }
}

/** `validate`: exit 0 valid, 1 invalid, 2 cannot run (usage, configuration, unreadable file). */
export async function validateCommand(args: string[], io: Output): Promise<number> {
  const options = {
    kind: { type: 'string' },
    format: { type: 'string' },
    business: { type: 'string' },
    json: { type: 'boolean' },
  } as const;
  const { values, positionals } = parse('validate', () =>
    parseArgs({ args, options, allowPositionals: true, strict: true }),
  );
  const [file, ...extra] = positionals;
  if (!file) throw new UsageError('validate needs a file', 'validate');
  if (extra.length > 0)
    throw new UsageError(
      `validate takes one file; also got ${JSON.stringify(extra[0])}`,
      'validate',
    );
  const kind = kindByName(values.kind ?? '');
  if (!kind) throw new UsageError(`--kind must be one of ${KIND_NAMES.join(', ')}`, 'validate');
  const format = FORMATS.find((f) => f === values.format);
  if (!format) throw new UsageError(`--format must be one of ${FORMATS.join(', ')}`, 'validate');
  if (values.business === '') throw new UsageError('--business must not be empty', 'validate');
  // An interchange carries no business id of ours: it is the pipeline's.
  if (format === 'x12' && !values.business)
    throw new UsageError("--format x12 needs --business (the pipeline's business)", 'validate');

  const config = configForCheck();
  let verdict: FileVerdict;
  try {
    verdict = await validateFile({
      file,
      kind,
      format,
      onboarding: config.onboarding,
      routingKey: config.broker.routingKey,
      ...(values.business ? { businessId: values.business } : {}),
    });
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new CannotRead(
      `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  if (values.json) {
    io.out(
      `${JSON.stringify(verdict.ok ? { valid: true, businessId: verdict.businessId, recordCount: verdict.records } : verdict.problem, null, 2)}\n`,
    );
  } else if (verdict.ok) {
    io.out(
      `${file}: valid — ${verdict.records} ${kind.name} record(s) for ${verdict.businessId}\n`,
    );
  } else {
    const lines = [`${file}: invalid — ${verdict.problem.detail ?? verdict.problem.title}`];
    for (const entry of verdict.problem.errors ?? []) {
      if ('index' in entry)
        lines.push(...entry.errors.map((message) => `  record ${entry.index}: ${message}`));
      else lines.push(`  ${entry.path}: ${entry.message}`);
    }
    io.out(`${lines.join('\n')}\n`);
  }
  return verdict.ok ? 0 : 1;
}

/** `lint`: configuration and every pipeline, as start-up reads them; stores are made (secrets read) but never connected. */
export async function lintCommand(args: string[], io: Output): Promise<number> {
  const { positionals } = parse('lint', () =>
    parseArgs({ args, options: {}, allowPositionals: true, strict: true }),
  );
  if (positionals.length > 0)
    throw new UsageError(`lint takes no arguments; got ${JSON.stringify(positionals[0])}`, 'lint');
  try {
    const config = loadConfig();
    // The portal's secret as serve reads it, but never the generated one: lint creates no file.
    if (config.portal.enabled && (config.portal.secret || config.environment === 'production'))
      readPortalSecret(config);
    const folder = pipelinesFolderState(config);
    if (folder !== 'present') {
      io.err(
        `pipelinesDirectory ${config.pipelinesDirectory} ${folder === 'missing' ? 'does not exist' : 'is not a folder'}\n`,
      );
      return 1;
    }
    const drops = openCheckedDrops(config);
    const misconfigured = await localDropProblems(drops);
    await Promise.all(drops.map(({ store }) => store.close()));
    if (misconfigured.length > 0) {
      io.err(`${misconfigured.length} problem(s):\n${misconfigured.join('\n')}\n`);
      return 1;
    }
    io.out(
      `configuration valid (environment ${config.environment}, ${config.tenants.length} tenant(s))\n`,
    );
    io.out(
      `${drops.length} pipeline(s) valid in ${config.pipelinesDirectory}${drops.map(({ pipeline }) => `\n  ${pipeline.name} (${pipeline.source.type}, ${pipeline.kind}, ${pipeline.format}) ${pipeline.file}`).join('')}\n`,
    );
    return 0;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.err(`${error.problems.length} problem(s):\n${error.message}\n`);
    return 1;
  }
}

/**
 * Local drops are looked at (their folder exists, no regular file where a settle folder must be);
 * SFTP and S3 drops are not, as `lint` connects to nothing (`status` and `/readyz` check those).
 */
async function localDropProblems(drops: readonly OpenedDrop[]): Promise<string[]> {
  const problems: string[] = [];
  for (const { pipeline, store } of drops) {
    if (store.type !== 'local') continue;
    try {
      await checkDrop(store, settleFolders(pipeline));
    } catch (error) {
      if (!(error instanceof DropMisconfigured)) throw error;
      problems.push(`${pipeline.file}: source.path: ${error.message}`);
    }
  }
  return problems;
}

/** The configuration, for onboarding profiles; a broken one stops `validate` with exit 2 (the file was never judged). */
function configForCheck(): Readonly<Config> {
  try {
    return loadConfig({ brokerRequired: false });
  } catch (error) {
    if (error instanceof ConfigError)
      throw new CannotRead(
        `invalid configuration (run "warehouse-ingest lint"):\n${error.message}`,
      );
    throw error;
  }
}

/** The input of a check could not be read: exit 2, one message. */
export class CannotRead extends Error {
  override readonly name = 'CannotRead';
}
