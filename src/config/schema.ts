import { z } from 'zod';
import { API_KEY_HASH_PATTERN, parseApiKeyHash } from '../api-keys.js';
import { KIND_NAMES } from '../records/kind.js';
import { eventsSchema, webhooksSchema } from '../events/config.js';
import { httpSchema } from './http-schema.js';

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

const tenantSchema = z.strictObject({
  // A colon would make the Basic-auth user-id ambiguous (RFC 7617).
  businessId: z
    .string()
    .regex(/^[^:\p{Cc}]{1,128}$/u, 'Expected 1-128 characters, no colon or control characters')
    .meta({
      description:
        'The business this credential acts for: the Basic-auth user-id. 1–128 characters, no colon or control characters.',
      examples: ['ACME'],
    }),
  apiKeyHash: z
    .string()
    .regex(API_KEY_HASH_PATTERN, {
      message: "Expected a scrypt hash printed by 'warehouse-ingest hash-key'",
      abort: true,
    })
    .refine((hash) => parseApiKeyHash(hash) !== undefined, {
      message:
        "Not a whole scrypt hash as 'warehouse-ingest hash-key' prints it (cut short or altered?): cost ln 10–20, r 1–16, p 1–4, a salt of 8+ bytes and a 32-byte hash, both in canonical base64. Hash the key again and paste the whole line.",
    })
    .meta({
      description:
        'The API key as a scrypt hash (PHC format), printed by `warehouse-ingest hash-key -`. Keys are never stored in clear.',
      examples: ['$scrypt$ln=15,r=8,p=1$<salt>$<hash>'],
    }),
  name: z.string().optional().meta({ description: 'A readable name, for people only.' }),
  webhooks: webhooksSchema,
});

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
      description: "Queue arguments; they must match an existing queue's exactly.",
      examples: [{ 'x-queue-type': 'quorum' }],
    }),
});

const brokerSchema = z
  .strictObject({
    url: z
      .string()
      .regex(/^amqps?:\/\//, 'Expected an amqp:// or amqps:// URL')
      .optional()
      .meta({
        description:
          'RabbitMQ URL (`amqp://` or `amqps://`), never logged with its password. Required in production; unset in development, the embedded NDJSON publisher is used instead; the sandbox publishes nothing.',
        examples: ['amqp://user:password@rabbitmq:5672/vhost'],
      }),
    exchange: z.string().min(1).meta({
      description: 'The durable topic exchange records are published to; asserted at start-up.',
    }),
    routingKey: z
      .string()
      .min(1)
      .meta({
        description:
          'Routing-key template. Placeholders: `{kind}`, `{businessId}`, or any record field path such as `{identifiers.site}`; each fills one topic word (`.`, `*`, `#` and white space become `_`; a missing value becomes `_`).',
        examples: ['{kind}.{businessId}.{identifiers.site}'],
      }),
    queues: z.array(queueSchema).meta({
      description:
        'Durable queues declared and bound at start-up. Readiness requires every kind of every tenant to reach one.',
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
      '`production`: configured tenants, RabbitMQ required. `development`: adds the demo tenant `DEMO`, the embedded publisher unless a broker URL is set. `sandbox`: any well-formed credentials, validates like production, publishes nothing. See docs/configuration.md#environments.',
  }),
  dataDirectory: z.string().min(1).meta({
    description:
      'Where the embedded publisher writes (`<dir>/outbox/messages-YYYY-MM-DD.ndjson`) and dropped files are spooled (`<dir>/spool`); relative to the working directory.',
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
    })
    .meta({
      description:
        'The admin listener, apart from the partner-facing port (which keeps `/healthz` for load balancers). See docs/operations-startup.md.',
    }),
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
            'Folder of the day files `lineage-YYYY-MM-DD.ndjson`. Default: `<dataDirectory>/lineage`.',
          examples: ['/var/lib/warehouse-ingest/lineage'],
        }),
      retentionDays: z.int().min(1).max(3650).meta({
        description: 'Days of journal kept, today included; older day files are deleted.',
      }),
    })
    .meta({
      description:
        "The journal of HTTP batches' lineage: which request carried each accepted record. A drop's lineage is kept in the drop itself. See docs/operations.md#lineage.",
    }),
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
  onboarding: z
    .record(z.string(), z.partialRecord(z.enum(KIND_NAMES), z.record(z.string(), z.unknown())))
    .meta({
      description:
        'Onboarding profiles: per business id (or `*`, the fallback), per kind, v2 path → value, filling the fields a v1 record cannot carry; `lines[].x` sets a field on every line. What the partner sends always wins. See docs/legacy-v1.md#onboarding-profiles.',
      examples: [
        { ACME: { 'sales-orders': { 'identifiers.site': 'UK01', 'shipping.carrier': 'DPD' } } },
      ],
    }),
});

export type Config = z.infer<typeof configSchema>;
export type Tenant = Config['tenants'][number];

/**
 * The environment variables of the operator contract and the field each sets (the loader applies
 * them last). `INGEST_CONFIG` names a file rather than a field.
 */
export const ENVIRONMENT_VARIABLES = {
  INGEST_ENV: 'environment',
  HOST: 'http.host',
  PORT: 'http.port',
  AMQP_URL: 'broker.url',
  ADMIN_HOST: 'admin.host',
  ADMIN_PORT: 'admin.port',
  LOG_LEVEL: 'log.level',
  LOG_FORMAT: 'log.format',
} as const;
