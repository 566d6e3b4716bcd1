/** Help text: one overview, one page per command (`help <command>` or `<command> --help`). */
export const OVERVIEW = `warehouse-ingest — takes in business record batches and publishes them to RabbitMQ.

Usage: warehouse-ingest <command> [options]

Commands:
  serve        Run the HTTP service and every pipeline in pipelinesDirectory
  run          Run one partner drop (pipeline file), optionally once
  validate     Check a file offline exactly as the API and the drops would, without publishing
  lint         Check the configuration and every pipeline file as start-up does, starting nothing
  mapping      "mapping try": the records a pipeline's mapping makes of a sample file, or its errors
  status       Inputs of each drop per state, and the last failures with their reasons
  lineage      Find which request or file carried a record number, its message id and receipt
  reprocess    Try again a pipeline's failed inputs (after master data was fixed)
  migrate      Apply the history's migrations now (PostgreSQL: with a role that may CREATE)
  events       Outbound events: emit one as the warehouse would, status, replay dead letters,
               resend one from the history, recover an endpoint's failed ones since a time,
               disable or enable an endpoint
  healthcheck  Ask the running service's admin listener for /healthz (the container's HEALTHCHECK)
  hash-key     Print the scrypt hash of an API key or an operator's password
  portal-link  Print a single-use sign-in link to the partner portal for one business
  help         This text, or "help <command>" for one command
  --version    The version of warehouse-ingest (also -v)

Configuration comes from INGEST_ENV, INGEST_CONFIG and the variables each command lists; every
configuration key also has a variable by the rule INGEST_<PATH> (http.port: INGEST_HTTP__PORT),
and secrets may come from files (AMQP_URL_FILE, INGEST_TENANTS_FILE). See docs/configuration.md.
`;

export const COMMANDS: Record<string, string> = {
  serve: `Usage: warehouse-ingest serve

Runs the HTTP service (GET /docs for the API reference) and one runner per pipeline file in
pipelinesDirectory. Stops gracefully on SIGTERM or SIGINT: no new requests or files, work in
flight gets shutdown.graceMs, then files in flight are interrupted (resumed at the next start);
exit 0. A second signal exits at once (1). Exits 1 at once when a listen address is taken.
/metrics, /readyz and /healthz are on the admin listener (ADMIN_HOST:ADMIN_PORT, 127.0.0.1:9464).

Environment: INGEST_ENV (production | development | sandbox), INGEST_CONFIG (a YAML file),
PORT, HOST (development: 127.0.0.1), ADMIN_PORT, ADMIN_HOST, AMQP_URL or AMQP_URL_FILE (RabbitMQ;
without it development publishes to data/outbox/), LOG_LEVEL, LOG_FORMAT (json | pretty), and
INGEST_<PATH> for any other configuration key.
`,
  migrate: `Usage: warehouse-ingest migrate

Applies the history's migrations (the embedded file under dataDirectory, or PostgreSQL when
history.url / HISTORY_URL is set) and exits. Without it the first write of serve or run applies
them, which needs a role that may CREATE; run migrate with such a role (HISTORY_URL of the
owner) before each upgrade, and the service's own role needs only to read and write rows.

Exit status: 0 the schema is current, 2 invalid configuration or the store could not be migrated.
`,
  healthcheck: `Usage: warehouse-ingest healthcheck [--timeout-ms <n>]

Reads the configuration as serve does (INGEST_ENV, INGEST_CONFIG, the environment) and asks the
admin listener's /healthz (admin.host:admin.port, 0.0.0.0 and :: asked on loopback). The admin
listener is plain HTTP even when http.tls is set, so the probe needs no certificate. The image's
HEALTHCHECK runs it; it needs no broker secret.
  --timeout-ms   How long to wait for the answer (default 2000).

Exit status: 0 the service answered 200, 1 it did not (one line says why), 2 usage error.
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
  --format     v2-json | v1-json | v1-csv | x12 (an interchange: 940 for sales-orders, 943 for
               purchase-orders; --business required; errors in partner terms, no 997 written)
  --business   The business the file is sent for: records of another are refused, and v1 fields
               come from its onboarding profile (in the configuration). Default: the business id
               of the first record.
  --json       Print the problem details (or the record count) as JSON instead of lines.

Exit status: 0 valid, 1 invalid, 2 usage error or the file or configuration cannot be read.
`,
  mapping: `Usage: warehouse-ingest mapping try <pipeline> <sample file> [--json]

Runs a pipeline's mapping (format csv or json, docs/formats.md) on a sample file exactly as its
drop would — the business's onboarding profile, validation, errors by line and column — without
publishing anything, and prints the records it makes (one JSON line each) or the errors.
  <pipeline>   A pipeline file (.yaml), or the name of one in pipelinesDirectory.
  --json       Print {records, errors} (or the problem of a file refused whole) as JSON.

Exit status: 0 valid, 1 invalid, 2 usage error or the pipeline, configuration or file cannot be read.
`,
  lint: `Usage: warehouse-ingest lint

Loads the configuration and every pipeline file in pipelinesDirectory exactly as "serve" does at
start-up (schemas, tenants, onboarding profiles, secrets by environment variable or file) and
reports every problem with its file and field. Starts nothing and connects to nothing.

Exit status: 0 all valid, 1 problems found, 2 usage error.
`,
  status: `Usage: warehouse-ingest status [--pipeline <name>] [--failures <n>] [--json]

Reads the durable state every drop keeps of its inputs (.warehouse-ingest/state/ in the drop) and
prints, per pipeline, how many inputs are in each state — received, validated, published,
receipted, failed, retry-scheduled, dead — and the last failures with their reasons, newest first.
Changes nothing and does not connect to the broker.
  --pipeline   Only this pipeline (its name in the pipeline file).
  --failures   How many failures to list per pipeline (default 10).
  --json       Print the report as JSON.

Exit status: 0, 1 when a drop could not be read, 2 usage error.
`,
  lineage: `Usage: warehouse-ingest lineage <number> [--kind <kind>] [--business <id>] [--pipeline <name>]
                                   [--since <date>] [--json]

Finds which input carried a record — by its own number: the order id (sales orders: the
shipment id), SKU, RGA id or work-order id — and prints one line per match: the request
(endpoint, record index, correlation id) or the file (name, CSV line, record index, where it
is now), the message id, and the file's receipt. The history first (on by default): every
batch of every source ends there, whichever process took it (the embedded file beside a
running serve) or instance (a PostgreSQL history, history.url or HISTORY_URL); when it knows
nothing of the number, or cannot be opened, the lineage kept in every drop of
pipelinesDirectory, and the HTTP journal day files earlier versions left (lineage.directory,
read-only until they age out).
  --kind       master-data | sales-orders | purchase-orders | return-goods | work-orders
  --business   Only records of this business id.
  --pipeline   Only this pipeline's drop (the old HTTP journal is then not searched).
  --since      Only inputs processed since then: 2026-11-22 (UTC midnight) or an ISO 8601 time.
  --json       One JSON object per match instead of a readable line.

Exit status: 0 found, 1 not found, 2 usage error, invalid configuration, or nothing found
while the history, a drop or the journal could not be searched (said on stderr).
`,
  reprocess: `Usage: warehouse-ingest reprocess --pipeline <name> [--since <date|duration>] [--status <statuses>] [--dry-run]

Tries again the inputs of one pipeline (by name, from pipelinesDirectory) that its drop's durable
state selects — typically files rejected because a business's master data or onboarding profile
was missing, once that is fixed. Each is processed from where it lies (e.g. failed/), with a new
receipt whose "attempt" counts the try; earlier receipts stay. Dead inputs are never selected.
  --pipeline   The pipeline's name (required).
  --since      Only inputs processed since then: a duration (7d, 12h, 30m, 2w) or a date
               (2026-11-01, 2026-11-01T09:00:00Z; UTC without an offset). Default: all.
  --status     Comma-separated: failed (default), retry-scheduled.
  --dry-run    List what would be reprocessed (file, status, attempts, place, last error);
               change and publish nothing.

Prints one line per input (name → outcome) and a summary; on a terminal a progress bar on stderr.
Logs go to stderr (warn and above unless LOG_LEVEL is set).
Exit status: 0 all accepted or nothing to do, 1 some input failed again (or another worker holds
an S3 drop's lease), 2 usage error.
`,
  events: `Usage: warehouse-ingest events emit --business <id> --type <type> [--data <file.json>]
                                      [--id <event id>] [--correlation-id <id>]
       warehouse-ingest events status [--business <id>] [--json]
       warehouse-ingest events replay [--business <id>] [--id <event id>] [--since <date|duration>]
                                      [--force]
       warehouse-ingest events resend --id <event id> [--endpoint <id|url>] [--business <id>]
       warehouse-ingest events recover --endpoint <id|url> --since <time|duration> [--business <id>]
                                       [--dry-run]
       warehouse-ingest events disable --endpoint <id|url|file:<pipeline>> [--business <id>]
       warehouse-ingest events enable --endpoint <id|url|file:<pipeline>> [--business <id>]
       warehouse-ingest events x12-unacknowledged [--pipeline <name>] [--json]

Publishes one event to the events exchange exactly as the warehouse does (docs/events.md), and
prints its id once the broker confirmed it. A running "serve" delivers it to the business's
webhooks; without one it waits in the delivery queue.
  --business        The business id (a tenant's businessId).
  --type            The event type, one of the event catalog's (docs/event-catalog.md):
                    sales-order.shipped, purchase-order.received …
  --data            A file holding the event's data (a JSON object), checked against the type's
                    schema in the catalog. Default: {}.
  --id              The event id (webhook-id). Default: a random UUID.
  --correlation-id  The ingest batch the event answers.

status shows, per business and endpoint, the events parked for a retry (and the next attempt),
the dead letters and the last failure, read from the broker without taking anything; then the
malformed events dead-lettered. With the history on, each endpoint's line adds what it keeps:
attempts delivered and failed, "failing since", whether it is disabled (after a 410 or by an
operator), and its last attempts; --business reads only that business's rows.

disable stops delivery to one endpoint in every running worker at once (its events are
dead-lettered, reason endpoint-disabled) and keeps the decision in the history, so workers
started later keep it; enable undoes it, or a disable after a 410. The endpoint is named by its
id, or its URL when it has none; --business when several businesses have one so named.

replay moves dead letters (events.queue.name + ".dead") back to the delivery queue with their
attempts reset — all, or those of one business, one event id, or dead-lettered since a date
(2026-11-01, UTC) or a duration (7d, 12h, 30m). One line per event on stdout; on a terminal a
progress bar on stderr. An event dead-lettered for one endpoint is retried for that endpoint only.
Letters of an endpoint a running worker reports backed off or disabled (410) stay where they
are, and a line on stderr says so: replayed now they would go back to dead without an attempt.
  --force           Replay them anyway.

resend and recover read the history (history.enabled; an embedded one is read through the
running serve, or directly while it is stopped) and publish events to the delivery queue again as the warehouse sent them: the same
id (webhook-id), type, business, occurrence time and data, signed afresh at delivery. resend
sends one event, delivered or dead, to every endpoint subscribed to it now, or with --endpoint
(a webhook's id or URL) to that one alone; it prints the id. recover resends to one endpoint
every event whose attempts there since --since (an ISO 8601 time or a duration: 2h, 7d) all
failed, oldest first (those still parked for a retry there are left to it): one line per
event on stdout, a progress bar on stderr on a terminal, a summary line; --dry-run lists them
and sends nothing. Without --business both read every
business's history (operator scope, said on stderr); with it, only that business's events.

x12-unacknowledged reads, for each pipeline whose outbound folder writes X12 (945, 944), the
partner's 997s in events.x12.acknowledgments, matches them to the interchanges sent, and lists
those without one after acknowledgeWithinMs, and those the partner refused (AK9 R or P);
exit 1 when there is any (docs/formats-x12.md).

Environment: AMQP_URL (required), INGEST_CONFIG, INGEST_ENV.
Environment: the history as "serve" has it (history.url, or the embedded folder, which a
running worker holds: disable and enable then reach the workers, which write it).
Exit status: 0 done, 1 broker trouble or (resend) no such event in the history, 2 usage error,
unreadable --data file, the history off or unreadable.
`,
  'portal-link': `Usage: warehouse-ingest portal-link --business <id> [--ttl <duration>]

Prints a sign-in link to the partner portal (<public URL>/portal/login?token=…) for one business,
signed with the portal secret (portal.secret; in development the one in <dataDirectory>/portal-secret).
Run it with the service's configuration. The link signs in once, until it expires; give it to the
business's people out of band. See docs/portal.md.
  --business   The business the link opens (a configured tenant's business id)
  --ttl        How long the link is valid: 90s, 15m, 1h (default), 1d; at most portal.maxLinkTtlMs

Exit status: 0 printed, 1 refused (ttl too long, unknown business, portal off), 2 usage error.
`,
  'hash-key': `Usage: warehouse-ingest hash-key <key | ->

Prints the scrypt hash of an API key, for tenants[].apiKeyHash in the configuration, or of
a portal operator's password, for portal.operators[].passwordHash, at OWASP's current
scrypt cost (N=2^17, r=8, p=1: 128 MiB and a fraction of a second per check).
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
