import { z } from 'zod';
import type { KindName } from '../records/kind.js';
import { LEGACY } from '../records/legacy/index.js';
import { RENAMABLE } from '../records/legacy/onboarding.js';
import { brokerUrlProblem, splitBrokerUrls } from './broker-url.js';
import { eventsSchema, webhooksSchema } from '../events/config.js';
import { httpSchema, sharedStateSchema } from './http-schema.js';
import { historySchema } from '../history/schema.js';
import { portalSchema } from './portal-schema.js';
import { scryptHashSchema } from './scrypt-hash.js';

/**
 * The configuration schema. Every field is described here once, with `.meta({ description })`;
 * docs/configuration.md and config/config.schema.json are generated from it
 * (`npm run docs:generate`, checked by test/docs/generated.test.ts). The values of the embedded
 * defaults live in config/default.yaml, not here: the loader merges the layers first and then
 * parses the whole, so a field's default is what default.yaml says.
 */

export const ENVIRONMENTS = ['production', 'development', 'sandbox'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const apiKeyHashSchema = scryptHashSchema;

const tenantSchema = z
  .strictObject({
    // A colon would make the Basic-auth user-id ambiguous (RFC 7617).
    businessId: z
      .string()
      .regex(/^[^:\p{Cc}]{1,128}$/u, 'Expected 1-128 characters, no colon or control characters')
      .meta({
        description:
          'The business this credential acts for: the Basic-auth user-id. 1–128 characters, no colon or control characters.',
        examples: ['ACME'],
      }),
    apiKeyHash: apiKeyHashSchema.optional().meta({
      description:
        'The API key as a scrypt hash (PHC format), printed by `warehouse-ingest hash-key -`. Keys are never stored in clear. Set this or `apiKeyHashes`.',
      examples: ['$scrypt$ln=15,r=8,p=1$<salt>$<hash>'],
    }),
    apiKeyHashes: z
      .array(apiKeyHashSchema)
      .min(1)
      .max(2, 'At most two keys at once: the new one and the one being retired')
      .optional()
      .meta({
        description:
          'During a key rotation (spec §5.6): the hashes of both keys, new and old, each accepted (checked in constant time, both always). Instead of `apiKeyHash`; drop the old one once the business has switched, then reload (SIGHUP). See docs/operations.md#rotating-an-api-key-reloading-on-sighup.',
        examples: [
          [
            '$scrypt$ln=15,r=8,p=1$<new salt>$<new hash>',
            '$scrypt$ln=15,r=8,p=1$<old salt>$<old hash>',
          ],
        ],
      }),
    name: z.string().optional().meta({ description: 'A readable name, for people only.' }),
    webhooks: webhooksSchema,
  })
  // Checked even when another field of the tenant is wrong, so every problem is said in one run.
  .refine((tenant) => tenant.apiKeyHash !== undefined || tenant.apiKeyHashes !== undefined, {
    path: ['apiKeyHash'],
    message:
      "Required: the key's hash (apiKeyHash), or both hashes during a rotation (apiKeyHashes)",
    when: (payload) => isObject(payload.value),
  })
  .refine((tenant) => tenant.apiKeyHash === undefined || tenant.apiKeyHashes === undefined, {
    path: ['apiKeyHash'],
    message:
      'Set apiKeyHash or apiKeyHashes, not both: during a rotation list both keys in apiKeyHashes',
    when: (payload) => isObject(payload.value),
  })
  // Editors validating against config.schema.json ask for one of the two as well.
  .meta({ anyOf: [{ required: ['apiKeyHash'] }, { required: ['apiKeyHashes'] }] });

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const profileEntries = z.record(z.string(), z.unknown()).optional();

/** Wire names a legacy field may not take: the other fields and columns of its shape. */
const taken = (kind: KindName) => {
  const { csv, root } = LEGACY[kind]!;
  const names = new Set([root, ...csv.header.map((field) => field.name)]);
  if (csv.lines) names.add(csv.lines.name);
  return (name: string) => names.has(name) || (csv.lines && name.startsWith(`${csv.lines.name}_`));
};
const platformRefTaken = taken(RENAMABLE.platformRef.kind);

const legacyOptionsSchema = z
  .strictObject({
    platformRef: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, {
        message: 'Expected a field name: a letter, then up to 63 letters, digits or _',
        abort: true,
      })
      .refine((name) => name === RENAMABLE.platformRef.field || !platformRefTaken(name), {
        message: 'Already the name of another v1 returns field or column',
      })
      .optional()
      .meta({
        description:
          "The wire name of the v1 returns field the spec calls `PlatformRef` (its real name carries the platform operator's brand): the JSON key and CSV column this business sends, which fills `identifiers.businessRgaNumber`. Set, `PlatformRef` itself is an unknown field for the business. Default: `PlatformRef`.",
        examples: ['ShopRef'],
      }),
    unknownFields: z.enum(['refuse', 'ignore']).optional().meta({
      description:
        "Fields beyond the v1 shape (JSON keys, CSV columns, a JSON body's other top-level keys): `refuse` answers 400 naming them; `ignore` leaves them out, lists them in the answer's `ignoredFields` (and a file's receipt) and logs each name once. Default: `refuse`.",
    }),
  })
  .meta({
    description:
      "How the business's v1 (legacy) inputs are read; a business without it uses the fallback profile's (`*`). See docs/legacy-v1.md#onboarding-profiles.",
  });

const onboardingProfileSchema = z.strictObject({
  'master-data': profileEntries,
  'sales-orders': profileEntries,
  'purchase-orders': profileEntries,
  'return-goods': profileEntries,
  'work-orders': profileEntries,
  legacy: legacyOptionsSchema.optional(),
} satisfies Record<KindName | 'legacy', z.ZodType>);

const queueSchema = z.strictObject({
  name: z
    .string()
    .min(1)
    .meta({ description: 'Queue name.', examples: ['warehouse.ingest.records'] }),
  bindingKeys: z
    .array(z.string().min(1))
    .min(1)
    .meta({
      description: 'Topic binding keys to the exchange (`#` = everything).',
      examples: [['sales-orders.*']],
    }),
  arguments: z
    .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
    .optional()
    .meta({
      description:
        "Queue arguments; they must match an existing queue's exactly. `x-queue-type` is `quorum` unless set here (replicated: a cluster keeps the queue through a node loss). A queue that already exists as a classic queue stops the start with a message naming it: set `{ x-queue-type: classic }` here to keep it, or give the queue a new name (docs/operations-instances.md#queue-types).",
      examples: [{ 'x-queue-type': 'classic' }, { 'x-max-length': 1000000 }],
    }),
  shards: z
    .int()
    .min(2)
    .max(64)
    .optional()
    .meta({
      description:
        'Spread this queue over N queues `<name>.0` … `<name>.<N-1>` (same arguments), past the one-core ceiling of a single queue: a consistent-hash exchange `<name>.shards` (plugin `rabbitmq_consistent_hash_exchange`) is bound with `bindingKeys` and hashes each message id, so the same id always lands in the same shard; records of one business are no longer in one queue order. Without the plugin on the broker, start-up stops and says so. See docs/performance.md#past-one-queue.',
      examples: [4],
    }),
  replaces: z
    .string()
    .min(1)
    .optional()
    .meta({
      description:
        "The queue's former name, after a rename (the way from a classic queue to a quorum one): on every connect, once this queue is bound, the former queue's bindings of the same `bindingKeys` are removed, so records go to this queue only; the former queue keeps what it holds for its consumers, and the log says how many are left. Remove it once the former queue is drained and deleted. See docs/operations-instances.md#queue-types.",
      examples: ['warehouse.ingest.records'],
    }),
});

/** What is wrong with one node's URL: its scheme, then what `brokerUrlProblem` checks. */
function brokerUrlIssue(url: string): string | undefined {
  if (!/^amqps?:\/\//.test(url)) return 'Expected an amqp:// or amqps:// URL';
  return brokerUrlProblem(url);
}

const brokerSchema = z
  .strictObject({
    url: z
      .union([z.string(), z.array(z.string()).min(1)])
      .superRefine((value, ctx) => {
        const urls = typeof value === 'string' ? splitBrokerUrls(value) : value;
        if (urls.length === 0) ctx.addIssue({ code: 'custom', message: 'Expected a broker URL' });
        urls.forEach((url, i) => {
          // Built from the URL with its password masked, never from the value itself.
          const problem = brokerUrlIssue(url);
          if (problem === undefined) return;
          const which = urls.length > 1 ? `node ${i + 1} of ${urls.length}: ` : '';
          ctx.addIssue({
            code: 'custom',
            message: `${which}${problem}`,
            path: typeof value === 'string' ? [] : [i],
          });
        });
      })
      .transform((value) => (typeof value === 'string' ? splitBrokerUrls(value) : [...value]))
      .optional()
      .meta({
        description:
          "RabbitMQ URL (`amqp://` or `amqps://`), or the URLs of a cluster's nodes: a list, or in `AMQP_URL` several URLs separated by commas, each with its own credentials. Every connection tries the nodes in a shuffled order and fails over to the next on a refused connect or a lost connection (docs/operations-instances.md#a-rabbitmq-cluster); logs, `/readyz` and `status` name the node as `host:port`, never with its password. Required in production; unset in development, the embedded NDJSON publisher is used instead; the sandbox publishes nothing.",
        examples: [
          'amqp://user:password@rabbitmq:5672/vhost',
          'amqp://user:password@rabbit-1:5672/vhost,amqp://user:password@rabbit-2:5672/vhost',
        ],
      }),
    exchange: z.string().min(1).meta({
      description: 'The durable topic exchange records are published to; asserted at start-up.',
    }),
    routingKey: z
      .string()
      .min(1)
      .meta({
        description:
          'Routing-key template. Placeholders: `{kind}`, `{businessId}`, or any record field path such as `{identifiers.site}`; each fills one topic word (`.`, `*`, `#` and white space become `_`; a missing value becomes `_`). AMQP carries at most 255 bytes: a record whose key would be longer fails validation, naming the field (400, or a failure receipt).',
        examples: ['{kind}.{businessId}.{identifiers.site}'],
      }),
    queues: z.array(queueSchema).meta({
      description:
        'Durable queues declared and bound at start-up. Readiness requires every kind of every tenant to reach one.',
    }),
    messageFormat: z.enum(['full', 'lean']).meta({
      description:
        "What each record's message carries besides its body, `messageId`, `contentType` and persistence. `full`: also `correlationId`, `type`, `timestamp` and the headers `business-id`, `source`, `source-name` and `traceparent` (`tracestate`). `lean`: none of them — consumers then tell the kind and business from the routing key only, and lose the batch's correlation id, the publish time, the source and the trace; worth it only where the broker is the bottleneck. docs/delivery-guarantee.md#messages-on-the-broker prices each field.",
      examples: ['lean'],
    }),
    publishTimeoutMs: z.int().positive().meta({
      description: "Longest wait for a batch's confirms before it fails with `503`.",
    }),
    reconnect: z
      .strictObject({
        initialDelayMs: z.int().positive().meta({ description: 'First reconnect delay.' }),
        maxDelayMs: z
          .int()
          .positive()
          .meta({ description: 'Longest reconnect delay; at least `initialDelayMs`.' }),
      })
      .meta({ description: 'Reconnect back-off: exponential, with jitter.' }),
  })
  .meta({ description: 'RabbitMQ: where accepted records are published, with confirms.' });

export const configSchema = z.strictObject({
  environment: z.enum(ENVIRONMENTS).meta({
    description:
      '`production`: configured tenants, RabbitMQ required. `development`: adds the demo tenant `DEMO`, the embedded publisher unless a broker URL is set. `sandbox`: accepts every well-formed credential, validates like production, publishes nothing. See docs/configuration.md#environments.',
  }),
  dataDirectory: z.string().min(1).meta({
    description:
      'Where the embedded publisher writes (`<dir>/outbox/messages-YYYY-MM-DD.ndjson`), and local scratch space (`<dir>/spool`): copies of dropped files being processed, and the records of a large CSV batch or file between validation and publishing (past 8 MiB). Relative to the working directory.',
  }),
  pipelinesDirectory: z.string().min(1).meta({
    description:
      "Pipeline definitions `serve` runs: every `*.yaml` directly in this folder (`pipelines/examples/` is not loaded). A relative path is relative to the folder of the configuration file that sets it (the packaged default: the package's own `pipelines/`), so the service finds the same pipelines from any working directory; from an environment variable, relative to the working directory. A missing folder is a warning at start-up.",
  }),
  http: httpSchema,
  admin: z
    .strictObject({
      host: z
        .string()
        .min(1)
        .meta({
          description:
            'Address of the admin listener (`/metrics`, `/readyz`, `/healthz`). Loopback by default: metrics carry tenant ids and readiness names partners. Set `0.0.0.0` where a scraper or an orchestrator probes from outside, and keep the port off the public load balancer.',
          examples: ['127.0.0.1', '0.0.0.0'],
        }),
      port: z
        .int()
        .min(0)
        .max(65535)
        .meta({
          description: 'Port of the admin listener; 0 picks a free one (tests).',
          examples: [9464],
        }),
      maxConnections: z.int().min(1).meta({
        description:
          'Connections the admin listener holds at once, apart from the partner-facing listener\'s `http.maxConnections`, so that probes and scrapes still get in while that one is full. One more is closed as soon as it is accepted (counted with `listener="admin"`).',
      }),
    })
    .meta({
      description:
        'The admin listener, apart from the partner-facing port (which keeps `/healthz` for load balancers). See docs/operations-startup.md.',
    }),
  sharedState: sharedStateSchema,
  log: z
    .strictObject({
      level: z.enum(LOG_LEVELS).meta({ description: 'The lowest level logged.' }),
      format: z.enum(['json', 'pretty']).meta({
        description:
          '`json`: one JSON object per line (for collectors); `pretty`: a short readable line for a terminal (development).',
        examples: ['pretty'],
      }),
    })
    .meta({ description: 'Logs on stdout (pino), secrets redacted.' }),
  broker: brokerSchema,
  lineage: z
    .strictObject({
      directory: z
        .string()
        .min(1)
        .optional()
        .meta({
          description:
            'Folder of the day files `lineage-YYYY-MM-DD.ndjson` earlier versions wrote. Default: `<dataDirectory>/lineage`.',
          examples: ['/var/lib/warehouse-ingest/lineage'],
        }),
      retentionDays: z.int().min(1).max(3650).meta({
        description:
          'Days of journal `lineage` still searches, today included; older day files are no longer read (and may be removed).',
      }),
    })
    .meta({
      description:
        "The per-instance journal of HTTP batches' lineage that versions before the history was on by default wrote. Nothing writes it now (every batch ends in the history); `lineage` searches its day files read-only until they age out. A drop's lineage is kept in the drop itself. See docs/operations.md#lineage.",
    }),
  history: historySchema,
  portal: portalSchema,
  shutdown: z
    .strictObject({
      graceMs: z.int().min(0).max(3_600_000).meta({
        description:
          "After SIGTERM/SIGINT, how long work in flight may go on before files in flight are interrupted (progress kept). Keep it a few seconds under the orchestrator's limit (Kubernetes `terminationGracePeriodSeconds`, 30 s).",
      }),
    })
    .meta({ description: 'The graceful stop. See docs/operations.md#stopping-sigterm-sigint.' }),
  tenants: z.array(tenantSchema).meta({
    description:
      'Who may send records: one credential per business. Put them in the `INGEST_CONFIG` file (`chmod 600`), not in the repository.',
  }),
  events: eventsSchema.prefault({}).meta({
    description:
      'The outbound half: where warehouse events arrive and how they are delivered to each business (webhooks per tenant). See docs/events.md.',
  }),
  onboarding: z.record(z.string(), onboardingProfileSchema).meta({
    description:
      "Onboarding profiles: per business id (or `*`, the fallback), per kind, v2 path → value, filling the fields a v1 record cannot carry; `lines[].x` sets a field on every line. What the partner sends always wins. `legacy` says how the business's v1 inputs are read. See docs/legacy-v1.md#onboarding-profiles.",
    examples: [
      {
        ACME: {
          'sales-orders': { 'identifiers.site': 'UK01', 'shipping.carrier': 'DPD' },
          legacy: { platformRef: 'ShopRef', unknownFields: 'ignore' },
        },
      },
    ],
  }),
});

export type Config = z.infer<typeof configSchema>;
export type Tenant = Config['tenants'][number];

/**
 * The short environment variables of the operator contract and the field each sets: aliases of
 * the names every key has by the rule in config/environment.ts (`PORT` = `INGEST_HTTP__PORT`).
 * `INGEST_CONFIG` names a file rather than a field.
 */
export const ENVIRONMENT_VARIABLES = {
  INGEST_ENV: 'environment',
  HOST: 'http.host',
  PORT: 'http.port',
  AMQP_URL: 'broker.url',
  REDIS_URL: 'sharedState.redis.url',
  REDIS_SENTINELS: 'sharedState.redis.sentinels',
  REDIS_SENTINEL_MASTER: 'sharedState.redis.masterName',
  REDIS_USERNAME: 'sharedState.redis.username',
  REDIS_DB: 'sharedState.redis.db',
  HISTORY_URL: 'history.url',
  ADMIN_HOST: 'admin.host',
  ADMIN_PORT: 'admin.port',
  LOG_LEVEL: 'log.level',
  LOG_FORMAT: 'log.format',
} as const;
