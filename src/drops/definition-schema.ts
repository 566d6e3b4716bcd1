import { z } from 'zod';
import { KIND_NAMES } from '../records/kind.js';
import { cronProblem, timezoneProblem, type JobSchedule } from '../schedule.js';
import { localSource } from '../stores/local/schema.js';
import { s3Source } from '../stores/s3/schema.js';
import { sftpSource } from '../stores/sftp/schema.js';
import { REPROCESS_STATUSES } from './state/input-state.js';
import { MAPPED_FORMATS, mappedKeyProblems, mappedKeys } from './definition-mapped.js';

/** The kinds `format: x12` reads (src/decode/x12/index.ts `X12_SETS`). */
const X12_KINDS: readonly string[] = ['sales-orders', 'purchase-orders'];

/**
 * The schema of a pipeline file (`pipelines/<partner>.yaml`): choices only — where the files
 * are, what they hold, when to look, what to do after — never mapping logic (that lives with the
 * record kinds). Every field is described here once; pipelines/pipeline.schema.json and the
 * pipeline part of docs/configuration.md are generated from it (`npm run docs:generate`).
 */

const cronExpression = z.string().superRefine((expression, context) => {
  const problem = cronProblem(expression);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});
const timeZone = z.string().superRefine((zone, context) => {
  const problem = timezoneProblem(zone);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});
const jobName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'Expected lower-case letters, digits and dashes (max 63)');

const readinessSchema = z
  .strictObject({
    strategy: z.enum(['stable', 'marker', 'rename']).default('stable').meta({
      description:
        '`stable`: size and mtime unchanged over `checks` looks spanning at least `quietMs`; `marker`: a `<name><markerSuffix>` file exists; `rename`: uploads arrive under a temporary suffix and are renamed when complete. What each guarantees: docs/file-drops.md#readiness.',
    }),
    checks: z
      .int()
      .min(1)
      .max(100)
      .default(2)
      .meta({ description: 'Looks with the same size and mtime needed (`stable`).' }),
    quietMs: z.int().min(0).max(3_600_000).default(30_000).meta({
      description:
        '`stable`: how long a file must be seen unchanged (size and mtime, between our own looks) before it is taken; `run --once` waits as long. A writer pausing longer than this is read in the middle: slow writers should upload under a temporary name or write a done marker. 0 takes a file after `checks` looks however close together.',
    }),
    intervalMs: z.int().min(10).max(60_000).default(1_000).meta({
      description:
        'Time between two looks when `run --once` waits for files to settle (`serve` looks once per poll).',
    }),
    minAgeMs: z.int().min(0).default(0).meta({ description: 'Minimum age since the last change.' }),
    markerSuffix: z.string().min(1).default('.done').meta({
      description: 'Done-marker suffix (`marker`); the marker is removed after settling.',
    }),
    temporarySuffixes: z
      .array(z.string().min(1))
      .default(['.part', '.tmp', '.filepart', '.partial'])
      .meta({
        description: 'Files ending in one of these are never inputs, whatever the strategy.',
      }),
  })
  .prefault({})
  .meta({
    description:
      'When an uploaded file is complete; the default never reads a file still being written.',
  });

const scheduleSchema = z
  .strictObject({
    pollIntervalMs: z.int().min(100).optional().meta({
      description:
        'Wait after a look ends before the next one. Default 5000 when `cron` is not given.',
    }),
    cron: cronExpression.optional().meta({
      description:
        'Instead of `pollIntervalMs`: look at the times of a node-cron expression (5 fields, or 6 with seconds first).',
      examples: ['*/5 22-23,0-6 * * *'],
    }),
    timezone: timeZone.optional().meta({
      description: "IANA time zone of `cron`; default: the process's own (`TZ`).",
      examples: ['Europe/London'],
    }),
  })
  .superRefine((schedule, context) => {
    if (schedule.cron !== undefined && schedule.pollIntervalMs !== undefined) {
      context.addIssue({
        code: 'custom',
        path: ['cron'],
        message: 'Give either pollIntervalMs or cron, not both',
      });
    }
    if (schedule.timezone !== undefined && schedule.cron === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['timezone'],
        message: 'A time zone applies to a cron schedule only: give cron too',
      });
    }
  })
  .transform(
    (s): JobSchedule =>
      s.cron === undefined
        ? { pollIntervalMs: s.pollIntervalMs ?? 5_000 }
        : { cron: s.cron, ...(s.timezone ? { timezone: s.timezone } : {}) },
  )
  .prefault({})
  .meta({
    description:
      'When the drop is looked at: every `pollIntervalMs`, or at the times of `cron`; one or the other. A look never overlaps the previous one. See docs/file-drops.md#schedules.',
  });

const reprocessJob = z.strictObject({
  name: jobName.meta({ description: 'Names the job in logs: `reprocess:<pipeline>:<name>`.' }),
  cron: cronExpression.meta({
    description: 'When the job runs, as `schedule.cron`.',
    examples: ['30 7 * * 1-5'],
  }),
  timezone: timeZone.optional().meta({ description: 'IANA time zone of `cron`.' }),
  statuses: z
    .array(z.enum(REPROCESS_STATUSES))
    .min(1)
    .default(['failed'])
    .meta({ description: 'Input states selected: `failed` (rejected) and/or `retry-scheduled`.' }),
  sinceDays: z
    .number()
    .positive()
    .max(3650)
    .default(7)
    .meta({ description: 'Inputs processed (or last changed) in the last this many days.' }),
});

/** Event type patterns, as a webhook's `events` (src/events/subscriptions.ts compiles both). */
const eventTypePattern = z
  .string()
  .regex(/^[a-z0-9*][a-z0-9.*-]*$/i, 'Expected an event type pattern');

/** A data path: dot-separated keys or array indexes; `$id`, `$type`… name the event's own fields. */
const csvColumn = z
  .string()
  .regex(
    /^(\$(id|type|occurredAt|businessId|correlationId)|[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)$/,
    'Expected a data path (a.b.0.c) or one of $id, $type, $occurredAt, $businessId, $correlationId',
  );

const outboundFolder = z
  .string()
  .transform((folder) => folder.replace(/\/+$/, ''))
  .refine(
    (folder) =>
      folder !== '' &&
      folder !== '.' &&
      !folder.startsWith('/') &&
      !folder.startsWith('.warehouse-ingest') &&
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
      !/(^|\/)\.\.?(\/|$)|\\|[\u0000-\u001f\u007f]/.test(folder),
    'Expected a folder inside the drop (not the drop itself, not .warehouse-ingest, no . or ..)',
  );

const x12Party = z
  .strictObject({
    qualifier: z
      .string()
      .regex(/^[A-Z0-9]{2}$/, 'Expected a two-character ISA qualifier (ZZ, 01, 12…)')
      .meta({
        description:
          'ISA05/ISA07 interchange id qualifier, e.g. `ZZ` (mutually defined), `01` (DUNS).',
      }),
    id: z
      .string()
      .regex(/^[A-Za-z0-9 ._-]{1,15}$/, 'Expected 1-15 letters, digits, spaces, dots, dashes')
      .meta({
        description:
          'ISA06/ISA08 interchange id (padded to 15); also GS02/GS03 unless `groupId` is given.',
      }),
    groupId: z
      .string()
      .regex(/^[A-Za-z0-9 ._-]{2,15}$/)
      .optional()
      .meta({
        description: 'GS02/GS03 application code, when the partner uses another than its ISA id.',
      }),
  })
  .meta({ description: 'One side of an X12 interchange: its ISA qualifier and id, its GS code.' });

const outboundX12Schema = z
  .strictObject({
    sender: x12Party.meta({ description: "The warehouse's own ISA/GS identifiers (ISA06, GS02)." }),
    receiver: x12Party.meta({ description: "The partner's ISA/GS identifiers (ISA08, GS03)." }),
    version: z.enum(['004010', '005010']).default('004010').meta({
      description: 'The X12 version written (GS08; ISA12 is `00401` or `00501` to match).',
    }),
    usage: z
      .enum(['P', 'T'])
      .default('P')
      .meta({ description: 'ISA15: `P` production, `T` test.' }),
    acknowledgments: outboundFolder.optional().meta({
      description:
        "Folder inside this drop where the partner leaves its 997s for what the service sent; read and matched to the interchanges sent (`events x12-unacknowledged`). Default: the partner's 997s are not read.",
      examples: ['acknowledgments/'],
    }),
    acknowledgeWithinMs: z.int().min(1_000).default(86_400_000).meta({
      description:
        'An interchange the partner has not acknowledged with a 997 after this long is listed as unacknowledged.',
    }),
  })
  .meta({
    description:
      'X12 only (required there): the identifiers of the interchanges written, 945 for `sales-order.shipped` and 944 for `purchase-order.received` (docs/formats-x12.md).',
  });

const outboundEventsSchema = z
  .strictObject({
    path: outboundFolder.meta({
      description:
        'Folder inside this drop where events are written, one file per event; never the drop itself (its files would be read as input). A trailing `/` is allowed.',
      examples: ['outbound/'],
    }),
    format: z.enum(['json', 'csv', 'x12']).default('json').meta({
      description:
        '`json`: the webhook body plus `id`; `csv`: a header line and one row with `columns`; `x12`: one interchange per event (945, 944), with `x12`. See docs/events.md#outbound-files.',
    }),
    x12: outboundX12Schema.optional(),
    columns: z
      .array(csvColumn)
      .min(1)
      .max(200)
      .optional()
      .meta({
        description:
          "CSV only (required there): the columns, each a path into the event's `data` (`orderNumber`, `lines.0.sku`) or an event field (`$id`, `$type`, `$occurredAt`, `$businessId`, `$correlationId`).",
        examples: [['$id', '$type', 'orderNumber', 'lines.0.sku']],
      }),
    types: z
      .array(eventTypePattern)
      .min(1)
      .default(['**'])
      .meta({
        description:
          'Event types written: `*` within one dot-separated part, `**` across parts. Default: every event of the business.',
        examples: [['sales-order.*']],
      }),
  })
  .superRefine((events, context) => {
    if (events.format === 'csv' && !events.columns)
      context.addIssue({ code: 'custom', path: ['columns'], message: 'Required for format csv' });
    if (events.format !== 'csv' && events.columns)
      context.addIssue({ code: 'custom', path: ['columns'], message: 'Only for format csv' });
    if (events.format === 'x12' && !events.x12)
      context.addIssue({ code: 'custom', path: ['x12'], message: 'Required for format x12' });
    if (events.format !== 'x12' && events.x12)
      context.addIssue({ code: 'custom', path: ['x12'], message: 'Only for format x12' });
  })
  .meta({
    description:
      "Outbound files: the warehouse's events for this pipeline's business, written into this drop for a partner without a webhook (docs/events.md#outbound-files).",
  });

export const pipelineSchema = z
  .strictObject({
    name: jobName.meta({
      description:
        'Unique; lower-case letters, digits and dashes (max 63). In logs, receipts and the `source-name` message header.',
      examples: ['acme-orders'],
    }),
    businessId: z.string().min(1).meta({
      description:
        'The business the partner acts for (a configured tenant): file drops have no Basic auth.',
    }),
    kind: z.enum(KIND_NAMES).meta({ description: 'The record kind the files hold.' }),
    format: z.enum(['v1-csv', 'v1-json', 'v2-json', ...MAPPED_FORMATS, 'x12']).meta({
      description:
        "How the files are written: legacy CSV, legacy JSON, a v2 JSON array, the partner's own CSV or JSON layout turned into records by `mapping` (docs/formats.md), or ASC X12 (004010/005010: 940 for sales-orders, 943 for purchase-orders; one interchange per file, a 997 written beside its receipt; docs/formats-x12.md).",
    }),
    ...mappedKeys,
    source: z
      .discriminatedUnion('type', [localSource, sftpSource, s3Source])
      .meta({ description: 'Where the files are: `type` is `local`, `sftp` or `s3`.' }),
    pattern: z
      .string()
      .min(1)
      .optional()
      .meta({
        description:
          'Glob on the names of the files in the drop (picomatch: `*`, `?`, `[0-9]`, `{a,b}`). Default: `*.csv` for v1-csv and csv, `*.{x12,edi}` for x12, else `*.json`.',
        examples: ['orders-*.csv'],
      }),
    readiness: readinessSchema,
    schedule: scheduleSchema,
    reprocess: z
      .array(reprocessJob)
      .default([])
      .superRefine((jobs, context) => {
        const seen = new Set<string>();
        jobs.forEach((job, index) => {
          if (seen.has(job.name))
            context.addIssue({
              code: 'custom',
              path: [index, 'name'],
              message: `Another reprocess job is named "${job.name}"`,
            });
          seen.add(job.name);
        });
      })
      .meta({
        description:
          'Reprocessing jobs of this drop: at each `cron` time, the inputs in one of `statuses` processed in the last `sinceDays` days are tried again from where they lie. Dead inputs are never selected. See docs/file-drops.md#reprocessing.',
      }),
    after: z
      .strictObject({
        success: z.enum(['move', 'delete', 'keep']).default('move').meta({
          description: 'An accepted file: `move` to `processedFolder`, `delete`, or `keep`.',
        }),
        failure: z
          .enum(['move', 'keep'])
          .default('move')
          .meta({ description: 'A rejected or dead file: `move` to `failedFolder`, or `keep`.' }),
        processedFolder: z
          .string()
          .min(1)
          .default('processed')
          .meta({ description: 'Folder inside the drop for accepted files.' }),
        failedFolder: z
          .string()
          .min(1)
          .default('failed')
          .meta({ description: 'Folder inside the drop for rejected and dead files.' }),
      })
      .prefault({})
      .meta({
        description:
          'What is done with a file once its outcome is known (and its receipt written).',
      }),
    retry: z
      .strictObject({
        initialDelayMs: z.int().min(0).default(5_000).meta({
          description: 'First wait after a transient failure; it doubles per failure, with jitter.',
        }),
        maxDelayMs: z.int().min(0).default(300_000).meta({ description: 'The longest wait.' }),
        maxAttempts: z.int().min(1).max(1000).default(5).meta({
          description:
            "Tries that could be the file's fault (rejections, unexpected errors, tries cut short by a crash) before it is `dead`: settled as failed and never tried again on its own. Outages do not count.",
        }),
      })
      .prefault({})
      .meta({
        description:
          "Back-off for a file that failed for a transient reason (broker, network, store, an unexpected error), kept in the input's state.",
      }),
    events: outboundEventsSchema.optional(),
    claimLeaseMs: z.int().min(10_000).default(600_000).meta({
      description:
        "How long a claim holds before another worker may take the file over (a crashed worker's claim). A worker renews the claims it works on four times per lease, so it must miss three renewals in a row to lose one; at least 10 s, so a busy event loop or a slow store never costs a live worker its file. A worker whose claim was taken over stops at its next chunk.",
    }),
  })
  .superRefine((pipeline, context) => {
    mappedKeyProblems(pipeline, context);
    if (pipeline.format === 'x12' && !X12_KINDS.includes(pipeline.kind))
      context.addIssue({
        code: 'custom',
        path: ['kind'],
        message: `format x12 reads ${X12_KINDS.join(' and ')} (940, 943)`,
      });
  })
  .meta({
    title: 'warehouse-ingest pipeline',
    description:
      'One partner drop: where its files are, what they hold, when to look, what to do after.',
  });
