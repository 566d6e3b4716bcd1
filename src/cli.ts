#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CURRENT_COST, hashApiKey } from './api-keys.js';
import {
  CannotRead,
  lintCommand,
  parse,
  validateCommand,
  type Output,
} from './cli/check-commands.js';
import { COMMANDS, helpFor, UsageError } from './cli/help.js';
import { statusCommand } from './cli/status.js';
import { lineageCommand } from './cli/lineage.js';
import { ConfigError } from './operator-errors.js';

const io: Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * SIGTERM or SIGINT begins the graceful stop (`shutdown.graceMs`, docs/operations.md#stopping-sigterm-sigint): exit 0
 * once it is done, 1 if a step failed. A second signal exits at once with 1.
 */
function onStopSignals(stop: () => Promise<void>, exitWhenStopped = true): void {
  let signals = 0;
  const handle = (signal: string) => {
    signals += 1;
    if (signals > 1) process.exit(1);
    process.stderr.write(`${signal}: stopping\n`);
    const stopped = stop();
    if (exitWhenStopped)
      stopped.then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.on('SIGTERM', () => handle('SIGTERM'));
  process.on('SIGINT', () => handle('SIGINT'));
}

/** Set when a failure must end the process even if something it opened still holds the event loop. */
let exitOnFailure = false;

async function serve(args: string[]): Promise<void> {
  parse('serve', () => parseArgs({ args, options: {}, strict: true }));
  const { startService } = await import('./main.js');
  const service = await startService().catch((error: unknown) => {
    // Whatever start-up opened before it failed must not keep a half-started service alive.
    exitOnFailure = true;
    throw error;
  });
  onStopSignals(() => service.stop());
}

async function run(args: string[]): Promise<void> {
  const { values, positionals } = parse('run', () =>
    parseArgs({
      args,
      options: { once: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    }),
  );
  const file = positionals[0];
  if (!file) throw new UsageError('run needs a pipeline file', 'run');
  const once = values.once === true;
  const { runPipelineFile } = await import('./cli/run.js');
  // --once: a signal interrupts the look as it does a running worker, and the summary is still printed.
  const stopSignal = new AbortController();
  if (once) onStopSignals(async () => stopSignal.abort(), false);
  const running = await runPipelineFile(file, { once, stopSignal: stopSignal.signal });
  if (once) {
    process.stdout.write(`${JSON.stringify({ pipeline: file, ...running.summary })}\n`);
    if (running.summary?.standby)
      process.stderr.write(
        "warehouse-ingest: another worker holds this drop's lease and is processing it; nothing was done here\n",
      );
    return;
  }
  onStopSignals(() => running.stop());
}

async function hashKey(args: string[]): Promise<void> {
  // "-" is the key's own argument here, not an option.
  const key = args[0] === '-' ? await readStdin() : args[0];
  if (!key)
    throw new UsageError(
      'hash-key needs the key, or "-" to read it from standard input',
      'hash-key',
    );
  if (key.length < 16)
    process.stderr.write(
      'warning: a key or password shorter than 16 characters is easy to guess\n',
    );
  process.stdout.write(`${await hashApiKey(key, CURRENT_COST)}\n`);
}

// biome-ignore lint/suspicious/noConfusingVoidType: a command that only prints returns nothing; one that decides the exit code returns it
async function main(argv: string[]): Promise<number | void> {
  const [command, ...rest] = negativeValuesJoined(argv);
  if (command === undefined || command === '--help' || command === '-h')
    return void process.stdout.write(helpFor(undefined));
  if (command === '--version' || command === '-v')
    return void process.stdout.write(`warehouse-ingest ${packageVersion()}\n`);
  if (command === 'help') {
    // `help --help` asks for help's own page, like `<command> --help`.
    const topic = rest[0] === '--help' || rest[0] === '-h' ? 'help' : rest[0];
    return void process.stdout.write(helpFor(topic));
  }
  if (Object.hasOwn(COMMANDS, command) && (rest.includes('--help') || rest.includes('-h')))
    return void process.stdout.write(helpFor(command));
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'run':
      return run(rest);
    case 'hash-key':
      return hashKey(rest);
    case 'validate':
      return validateCommand(rest, io);
    case 'lint':
      return lintCommand(rest, io);
    case 'status':
      return statusCommand(rest, io);
    case 'lineage':
      return lineageCommand(rest, io);
    case 'mapping':
      return (await import('./cli/mapping.js')).mappingCommand(rest, io);

    case 'migrate':
      return (await import('./cli/migrate.js')).migrateCommand(rest, io);
    case 'healthcheck':
      return (await import('./cli/healthcheck.js')).healthcheckCommand(rest, io);
    case 'events':
      return (await import('./cli/events/index.js')).eventsCommand(rest, io, {
        out: process.stdout,
        err: process.stderr,
      });
    case 'portal-link':
      return (await import('./cli/portal-link.js')).portalLinkCommand(rest, io);
    case 'reprocess':
      return (await import('./cli/reprocess.js')).reprocessCommand(rest, io, {
        out: process.stdout,
        err: process.stderr,
      });
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (error: unknown) => {
    // One clear message, never a stack trace: the unexpected case prints its message only.
    if (error instanceof ConfigError)
      process.stderr.write(`warehouse-ingest: invalid configuration:\n${error.message}\n`);
    else if (error instanceof UsageError)
      process.stderr.write(
        `warehouse-ingest: ${error.message}; see "warehouse-ingest help${error.command ? ` ${error.command}` : ''}"\n`,
      );
    else
      process.stderr.write(
        `warehouse-ingest: ${error instanceof Error ? error.message : String(error)}\n`,
      );
    process.exitCode = error instanceof UsageError || error instanceof CannotRead ? 2 : 1;
    if (exitOnFailure) process.exit();
  },
);

/** The version in package.json, which sits one folder above both src/cli.ts and dist/cli.js. */
function packageVersion(): string {
  const file = new URL('../package.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/**
 * `--failures -5` → `--failures=-5`: node's parseArgs calls a value that starts with `-` ambiguous
 * and says so in its own words; joined, the command checks the value and says what it needs.
 */
function negativeValuesJoined(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    if (/^--[a-z][a-z-]*$/.test(arg) && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i += 1;
    } else out.push(arg);
  }
  return out;
}
