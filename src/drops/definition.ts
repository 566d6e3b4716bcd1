import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { issueProblems } from '../config.js';
import { PARSE_OPTIONS } from '../records/issues.js';
import { KIND_NAMES } from '../records/kind.js';
import { cronProblem, timezoneProblem, type JobSchedule } from '../schedule.js';
import { REPROCESS_STATUSES } from './state/input-state.js';

/**
 * Pipeline definitions: one YAML file per partner drop under `pipelines/`. Choices only — where
 * the files are, what they hold, when to look, what to do after — never mapping logic (that
 * lives with the record kinds). Validated at start-up; errors name the file and the field.
 */

/** A secret is named, never written inline: an environment variable or a file (e.g. a mounted secret). */
const secretRef = z.union([
  z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/) }),
  z.strictObject({ file: z.string().min(1) }),
]);
export type SecretRef = z.infer<typeof secretRef>;

const localSource = z.strictObject({
  type: z.literal('local'),
  /** The drop folder. */
  path: z.string().min(1),
});

const sftpSource = z.strictObject({
  type: z.literal('sftp'),
  host: z.string().min(1),
  port: z.int().min(1).max(65535).default(22),
  username: z.string().min(1),
  password: secretRef.optional(),
  privateKey: secretRef.optional(),
  passphrase: secretRef.optional(),
  /** Pinned host keys as `ssh-keygen -l` prints them (`SHA256:…`). */
  hostKeyFingerprints: z
    .array(
      z
        .string()
        .regex(
          /^SHA256:[A-Za-z0-9+/]{43}=?$/,
          'Expected SHA256:<base64> as ssh-keygen -l prints it',
        ),
    )
    .optional(),
  /** A known_hosts file. */
  knownHosts: z.string().min(1).optional(),
  path: z.string().min(1),
  timeoutMs: z.int().positive().default(30_000),
});

const s3Source = z.strictObject({
  type: z.literal('s3'),
  bucket: z.string().min(1),
  prefix: z.string().default(''),
  region: z.string().min(1),
  endpoint: z.url().optional(),
  forcePathStyle: z.boolean().default(false),
  accessKeyId: secretRef.optional(),
  secretAccessKey: secretRef.optional(),
  timeoutMs: z.int().positive().default(30_000),
});

const cronExpression = z.string().superRefine((expression, context) => {
  const problem = cronProblem(expression);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});
const timeZone = z.string().superRefine((zone, context) => {
  const problem = timezoneProblem(zone);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});

export const pipelineSchema = z.strictObject({
  /** Unique; lower-case letters, digits and dashes. Used in logs, receipts and message headers. */
  name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'Expected lower-case letters, digits and dashes (max 63)'),
  /** The business the partner acts for: file drops have no Basic auth. */
  businessId: z.string().min(1),
  kind: z.enum(KIND_NAMES),
  format: z.enum(['v1-csv', 'v1-json', 'v2-json']),
  source: z.discriminatedUnion('type', [localSource, sftpSource, s3Source]),
  /** Glob on file names (`*` and `?`); default `*.csv` for v1-csv, `*.json` otherwise. */
  pattern: z.string().min(1).optional(),
  readiness: z
    .strictObject({
      /**
       * `stable`: size and mtime unchanged over `checks` looks; `marker`: a `<name><markerSuffix>` file
       * exists; `rename`: uploads arrive under a temporary suffix and are renamed when complete
       * (any file not ending in a temporary suffix is ready). Temporary suffixes are always ignored.
       */
      strategy: z.enum(['stable', 'marker', 'rename']).default('stable'),
      checks: z.int().min(1).max(100).default(2),
      /** Time between two looks when `run --once` waits for files to settle (serve looks once per poll). */
      intervalMs: z.int().min(10).max(60_000).default(1_000),
      minAgeMs: z.int().min(0).default(0),
      markerSuffix: z.string().min(1).default('.done'),
      temporarySuffixes: z
        .array(z.string().min(1))
        .default(['.part', '.tmp', '.filepart', '.partial']),
    })
    .prefault({}),
  /**
   * When the drop is looked at: every `pollIntervalMs` (after the previous look ends), or at the
   * times of a `cron` expression (5 fields, or 6 with seconds) in `timezone` (IANA; default: the
   * process's own). One or the other; neither means every 5000 ms.
   */
  schedule: z
    .strictObject({
      pollIntervalMs: z.int().min(100).optional(),
      cron: cronExpression.optional(),
      timezone: timeZone.optional(),
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
    .prefault({}),
  /**
   * Reprocessing jobs of this drop: at each `cron` time, the inputs whose durable state is one of
   * `statuses` and that were processed in the last `sinceDays` days are tried again from where
   * they lie (README "Reprocessing"). Dead inputs are never selected.
   */
  reprocess: z
    .array(
      z.strictObject({
        /** Names the job in logs: `reprocess:<pipeline>:<name>`. */
        name: z
          .string()
          .regex(
            /^[a-z0-9][a-z0-9-]{0,62}$/,
            'Expected lower-case letters, digits and dashes (max 63)',
          ),
        cron: cronExpression,
        timezone: timeZone.optional(),
        statuses: z.array(z.enum(REPROCESS_STATUSES)).min(1).default(['failed']),
        sinceDays: z.number().positive().max(3650).default(7),
      }),
    )
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
    }),
  after: z
    .strictObject({
      success: z.enum(['move', 'delete', 'keep']).default('move'),
      failure: z.enum(['move', 'keep']).default('move'),
      processedFolder: z.string().min(1).default('processed'),
      failedFolder: z.string().min(1).default('failed'),
    })
    .prefault({}),
  /**
   * Back-off for a file that failed for a transient reason (broker, network, store, an unexpected
   * error): the wait doubles from `initialDelayMs` up to `maxDelayMs` (with jitter) per file.
   * After `maxAttempts` tries that could be the file's fault (rejections, unexpected errors, tries
   * cut short by a crash) it is dead: settled as failed and never tried again on its own.
   * Broker and store outages do not use attempts.
   */
  retry: z
    .strictObject({
      initialDelayMs: z.int().min(0).default(5_000),
      maxDelayMs: z.int().min(0).default(300_000),
      maxAttempts: z.int().min(1).max(1000).default(5),
    })
    .prefault({}),
  /** How long a claim holds before another worker may take the file over (a crashed worker's claim). */
  claimLeaseMs: z.int().min(1_000).default(600_000),
});

export type PipelineDefinition = Readonly<z.infer<typeof pipelineSchema>>;
/** A definition and the file it came from (for errors that name it). */
export type LoadedPipeline = PipelineDefinition & { readonly file: string };

/** Reads every `*.yaml` / `*.yml` directly in `directory`; all problems of all files at once. */
export function loadPipelines(
  directory: string,
  options: { tenants?: readonly string[] } = {},
): LoadedPipeline[] {
  let files: string[];
  try {
    files = readdirSync(directory)
      .filter((f) => /\.ya?ml$/.test(f))
      .sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return loadPipelineFiles(
    files.map((name) => path.join(directory, name)),
    options,
  );
}

/** Reads the given pipeline files; all problems of all files at once. */
export function loadPipelineFiles(
  files: readonly string[],
  options: { tenants?: readonly string[] } = {},
): LoadedPipeline[] {
  const problems: ConfigProblem[] = [];
  const pipelines: LoadedPipeline[] = [];
  const names = new Map<string, string>();
  for (const file of files) {
    const parsed = parsePipeline(file, problems);
    if (!parsed) continue;
    const earlier = names.get(parsed.name);
    if (earlier)
      problems.push({
        file,
        field: 'name',
        message: `"${parsed.name}" is already the name of ${earlier}`,
      });
    names.set(parsed.name, file);
    if (options.tenants && !options.tenants.includes(parsed.businessId)) {
      problems.push({
        file,
        field: 'businessId',
        message: `No tenant has business id "${parsed.businessId}"`,
      });
    }
    if (
      parsed.source.type === 'sftp' &&
      !parsed.source.hostKeyFingerprints?.length &&
      !parsed.source.knownHosts
    ) {
      problems.push({
        file,
        field: 'source.hostKeyFingerprints',
        message:
          'Pin the server key (hostKeyFingerprints or knownHosts): host keys are never trusted blindly',
      });
    }
    if (parsed.source.type === 'sftp' && !parsed.source.password && !parsed.source.privateKey) {
      problems.push({
        file,
        field: 'source.privateKey',
        message: 'Give privateKey or password (by env or file)',
      });
    }
    pipelines.push(Object.freeze({ ...parsed, file }));
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return pipelines;
}

function parsePipeline(
  file: string,
  problems: ConfigProblem[],
): z.infer<typeof pipelineSchema> | undefined {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (error) {
    problems.push({
      file,
      field: '(file)',
      message: ((error as Error).message.split('\n')[0] ?? 'unreadable').slice(0, 200),
    });
    return undefined;
  }
  const result = pipelineSchema.safeParse(raw, PARSE_OPTIONS);
  if (result.success) return result.data;
  problems.push(...issueProblems(result.error.issues, () => file));
  return undefined;
}

/** The JSON Schema of a pipeline file, for editor completion (`pipelines/pipeline.schema.json`). */
export function pipelineJsonSchema(): Record<string, unknown> {
  return {
    $id: 'https://warehouse-ingest/pipeline.schema.json',
    title: 'warehouse-ingest pipeline',
    ...z.toJSONSchema(pipelineSchema, { io: 'input' }),
  };
}
