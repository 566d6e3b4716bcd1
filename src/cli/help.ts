/** Help text: one overview, one page per command (`help <command>` or `<command> --help`). */
export const OVERVIEW = `warehouse-ingest — takes in business record batches and publishes them to RabbitMQ.

Usage: warehouse-ingest <command> [options]

Commands:
  serve        Run the HTTP service and every pipeline in pipelinesDirectory
  run          Run one partner drop (pipeline file), optionally once
  validate     Check a file offline exactly as the API and the drops would, without publishing
  lint         Check the configuration and every pipeline file as start-up does, starting nothing
  hash-key     Print the scrypt hash of an API key for tenants[].apiKeyHash
  help         This text, or "help <command>" for one command

Configuration comes from INGEST_ENV, INGEST_CONFIG and the variables each command lists.
`;

export const COMMANDS: Record<string, string> = {
  serve: `Usage: warehouse-ingest serve

Runs the HTTP service (GET /docs for the API reference) and one runner per pipeline file in
pipelinesDirectory. Stops gracefully on SIGTERM or SIGINT: no new requests or files, work in
flight gets shutdown.graceMs, then files in flight are interrupted (resumed at the next start);
exit 0. A second signal exits at once (1).

Environment: INGEST_ENV (production | development | sandbox), INGEST_CONFIG (a YAML file),
PORT, HOST, AMQP_URL (RabbitMQ; without it development publishes to data/outbox/).
`,
  run: `Usage: warehouse-ingest run <pipeline.yaml> [--once]

Runs one partner drop, without the HTTP service. Stops gracefully on SIGTERM or SIGINT, as serve does.
  --once   Process every ready file, print a JSON summary line and exit
           (exit 1 only when the drop itself cannot be read; an invalid file gets a failure receipt).
`,
  validate: `Usage: warehouse-ingest validate <file> --kind <kind> --format <format> [--business <id>] [--json]

Checks a file offline — no broker, no network, nothing published — and prints exactly the errors
the API and a drop's receipt would give (v1: the legacy path, or the CSV line and column).
  --kind       master-data | sales-orders | purchase-orders | return-goods | work-orders
  --format     v2-json | v1-json | v1-csv
  --business   The business the file is sent for: records of another are refused, and v1 fields
               come from its onboarding profile (in the configuration). Default: the business id
               of the first record.
  --json       Print the problem details (or the record count) as JSON instead of lines.

Exit status: 0 valid, 1 invalid, 2 usage error or the file or configuration cannot be read.
`,
  lint: `Usage: warehouse-ingest lint

Loads the configuration and every pipeline file in pipelinesDirectory exactly as "serve" does at
start-up (schemas, tenants, onboarding profiles, secrets by environment variable or file) and
reports every problem with its file and field. Starts nothing and connects to nothing.

Exit status: 0 all valid, 1 problems found, 2 usage error.
`,
  'hash-key': `Usage: warehouse-ingest hash-key <key | ->

Prints the scrypt hash of an API key, for tenants[].apiKeyHash in the configuration.
Use "-" to read the key from standard input (keeps it out of the shell history).
`,
  help: `Usage: warehouse-ingest help [command]

Prints the overview, or the help of one command (the same as "<command> --help").
`,
};

/** A mistake in how the command was called: one line on stderr, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    /** The command whose help to point to. */
    readonly command?: string,
  ) {
    super(message);
  }
}

export function helpFor(command: string | undefined): string {
  if (command === undefined) return OVERVIEW;
  const text = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (text === undefined) throw new UsageError(`unknown command "${command}"`);
  return text;
}
