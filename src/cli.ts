#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { hashApiKey } from './api-keys.js';
import { ConfigError } from './errors.js';

const HELP = `warehouse-ingest — takes in business record batches and publishes them to RabbitMQ.

Usage:
  warehouse-ingest serve              Run the HTTP service (config: INGEST_ENV, INGEST_CONFIG, PORT, HOST, AMQP_URL)
  warehouse-ingest run <pipeline.yaml> [--once]
                                      Run one partner drop. --once: process every ready file, print a
                                      summary line and exit (1 only when the drop cannot be read).
  warehouse-ingest hash-key <key|->   Print the scrypt hash of an API key for tenants[].apiKeyHash.
                                      Use "-" to read the key from standard input (keeps it out of shell history).
  warehouse-ingest help               This text.
`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

async function serve(): Promise<void> {
  const { startService } = await import('./main.js');
  const service = await startService();
  let signals = 0;
  const stop = (signal: string) => {
    signals += 1;
    if (signals > 1) process.exit(1);
    process.stderr.write(`${signal}: stopping\n`);
    service.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function run(args: string[], once: boolean): Promise<void> {
  const file = args[0];
  if (!file) throw new UsageError('run needs a pipeline file');
  const { runPipelineFile } = await import('./main.js');
  const running = await runPipelineFile(file, { once });
  if (once) {
    process.stdout.write(`${JSON.stringify({ pipeline: file, ...running.summary })}\n`);
    if (running.summary?.standby) process.stderr.write('warehouse-ingest: another worker holds this drop\'s lease and is processing it; nothing was done here\n');
    return;
  }
  const stop = () => void running.stop().then(() => process.exit(0), () => process.exit(1));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

async function hashKey(args: string[]): Promise<void> {
  const key = args[0] === '-' ? await readStdin() : args[0];
  if (!key) throw new UsageError('hash-key needs the key, or "-" to read it from standard input');
  if (key.length < 16) process.stderr.write('warning: an API key shorter than 16 characters is easy to guess\n');
  process.stdout.write(`${await hashApiKey(key)}\n`);
}

class UsageError extends Error {}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, strict: false, options: { once: { type: 'boolean' } } });
  const [command, ...rest] = positionals;
  switch (command) {
    case 'serve':
      return serve();
    case 'run':
      return run(rest, values.once === true);
    case 'hash-key':
      return hashKey(rest);
    case undefined:
    case 'help':
      process.stdout.write(HELP);
      return;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError) process.stderr.write(`warehouse-ingest: invalid configuration:\n${error.message}\n`);
  else if (error instanceof UsageError) process.stderr.write(`warehouse-ingest: ${error.message}\n\n${HELP}`);
  else process.stderr.write(`warehouse-ingest: ${(error as Error)?.message ?? String(error)}\n`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
});
