/**
 * The `history` part of the configuration schema (assembled by config/schema.ts): where the
 * history is kept, for how long, and the writer's bounds. Every field is described once; the
 * values of the defaults are in config/default.yaml.
 */
import { z } from 'zod';

const days = (what: string) =>
  z
    .int()
    .min(1)
    .max(3650)
    .meta({ description: `Days ${what} are kept; older rows are deleted by the hourly prune.` });

export const historySchema = z
  .strictObject({
    enabled: z.boolean().meta({
      description:
        "Whether batches, records, events and delivery attempts are written to the history. On by default, on the embedded store unless `url` is set; the sandbox never keeps one. Off (an operator's choice, said at start-up), nothing is written and nothing is opened, so: the partner API answers 404 for batches, records and events; the portal lists nothing; `lineage` finds only dropped files (their lineage in the drop); `events resend` and `recover` are unavailable; an `events disable` is forgotten at restart. See docs/history.md#turning-it-off.",
    }),
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'Expected a postgres:// or postgresql:// URL')
      .optional()
      .meta({
        description:
          "PostgreSQL URL: set, every instance given the same URL shares one history (a fleet). Migrations are applied by the first write after start-up (once, whichever instance comes first), or beforehand by `warehouse-ingest migrate` with a role that may CREATE (then the service's own role needs none). Unset: the embedded history, a SQLite file under `dataDirectory`, shared by the processes of one machine. Never logged with its password; environment variable `HISTORY_URL` (or `HISTORY_URL_FILE`).",
        examples: ['postgres://ingest:password@db:5432/warehouse_ingest'],
      }),
    directory: z
      .string()
      .min(1)
      .optional()
      .meta({
        description:
          'Folder of the embedded history (when `url` is unset): it holds the SQLite file `history.sqlite` and its write-ahead log. Several processes on one machine may use it at once (`serve` and `run --once`); not on a network file system, whose locks SQLite cannot rely on. Default: `<dataDirectory>/history`.',
        examples: ['/var/lib/warehouse-ingest/history'],
      }),
    poolSize: z.int().min(1).max(100).meta({
      description: 'Connections each instance keeps to PostgreSQL at most.',
    }),
    retentionDays: z
      .strictObject({
        batches: days('batches (accepted and refused)'),
        records: days("records (each record's business key, message id and batch)"),
        events: days('warehouse events'),
        attempts: days('delivery attempts'),
      })
      .refine((days) => days.records <= days.batches, {
        message: 'records are kept no longer than their batches: records ≤ batches',
        path: ['records'],
      })
      .meta({
        description:
          "Retention per table. Records are kept no longer than batches (a record is found through its batch, and the embedded store prunes records with their batch). An endpoint's state is current state and is never pruned.",
      }),
    maxPendingRows: z.int().min(1000).max(10_000_000).meta({
      description:
        'Rows the writer holds in memory while it writes (or falls behind). While the store cannot write, rows go to a spool on disk under the history folder instead, up to ten times this many, and are written first once it can; past that bound the newest are dropped and counted (`warehouse_ingest_history_dropped_rows_total`). Ingest and delivery never wait on the history.',
    }),
    flushMs: z.int().min(1).max(60_000).meta({
      description:
        'How long rows are gathered before one write: at many small batches a second, one transaction carries many. A kill loses at most what waits.',
    }),
  })
  .meta({
    description:
      'The history: what happened to every batch, record, event and delivery, kept for a retention period and queryable per business. Embedded by default; PostgreSQL for a fleet. See docs/decisions.md#the-history-store-sqlite-embedded-postgresql-for-fleets.',
  });

export type HistoryConfig = z.infer<typeof historySchema>;
