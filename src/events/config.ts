import { z } from 'zod';

/**
 * Configuration of the outbound half: where warehouse events arrive (`events`) and where each
 * business wants them (`tenants[].webhooks`). Plugged into the main schema in src/config.ts;
 * every field defaults, so configurations written before events existed still load.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Delays before attempt 1, 2, … (ms): immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_SCHEDULE: readonly number[] = [
  0,
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  10 * HOUR,
];

export const QUEUE_TYPES = ['quorum', 'classic'] as const;
export type QueueType = (typeof QUEUE_TYPES)[number];

// Completed with `operatorWebhook` below, once the webhook schema it reuses is defined.
const eventsDeliverySchema = z.strictObject({
  exchange: z
    .string()
    .min(1)
    .default('warehouse.events')
    .meta({
      description:
        'Durable topic exchange the warehouse publishes events to, routing key `<type>.<businessId>`. Declared at start-up.',
      examples: ['warehouse.events'],
    }),
  queue: z
    .strictObject({
      name: z
        .string()
        .min(1)
        .default('warehouse-ingest.events')
        .meta({
          description:
            'Delivery queue bound to the exchange with `#`; every worker consumes it. Its retry queues are `<name>.retry.<delay>ms.quorum` (`<name>.retry.<delay>ms` with classic queues), its dead-letter queue `<name>.dead`.',
          examples: ['warehouse-ingest.events'],
        }),
      type: z
        .enum(QUEUE_TYPES)
        .default('quorum')
        .meta({
          description:
            'Queue type of the delivery and dead-letter queues (quorum: replicated, survives a node loss). Must match an existing queue.',
          examples: ['quorum'],
        }),
    })
    .prefault({})
    .meta({ description: 'The delivery queue.' }),
  prefetch: z
    .int()
    .min(1)
    .max(1000)
    .default(128)
    .meta({
      description:
        'Unacknowledged events one worker holds at once (all endpoints together). Keep it well above twice concurrencyPerEndpoint: a hanging endpoint holds up to that many, the rest stay for the other endpoints.',
      examples: [128],
    }),
  deliveryTimeoutMs: z
    .int()
    .min(100)
    .max(300_000)
    .default(15_000)
    .meta({
      description:
        'One attempt (connect, send, answer headers and capped body) must finish within this, or it counts as failed.',
      examples: [15000],
    }),
  retrySchedule: z
    .array(
      z
        .int()
        .min(0)
        .max(7 * 24 * HOUR),
    )
    .min(1)
    .max(30)
    .default([...DEFAULT_RETRY_SCHEDULE])
    .meta({
      description:
        'Delay in ms before each attempt; its length is the number of attempts. The first entry is ignored (the first attempt is made on arrival). After the last failed attempt the event goes to the dead-letter queue.',
      examples: [[0, 5000, 300000, 1800000, 7200000, 18000000, 36000000, 36000000]],
    }),
  responseBodyLimitBytes: z
    .int()
    .min(0)
    .max(1_048_576)
    .default(4096)
    .meta({
      description:
        "Bytes of an endpoint's answer read (for the log on failure), then the rest is discarded.",
      examples: [4096],
    }),
  concurrencyPerEndpoint: z
    .int()
    .min(1)
    .max(256)
    .default(16)
    .meta({
      description:
        'Attempts in flight at once per endpoint and worker: what one receiver is asked to take in parallel. Events for an endpoint that cannot keep up are parked on the broker (docs/events.md "Isolation") so it never holds back another business.',
      examples: [16],
    }),
  circuit: z
    .strictObject({
      failures: z
        .int()
        .min(1)
        .max(1000)
        .default(5)
        .meta({
          description:
            'Failed attempts in a row (any events) after which an endpoint is backed off as a whole.',
          examples: [5],
        }),
      coolDownMs: z
        .int()
        .min(10)
        .max(24 * HOUR)
        .default(30 * SECOND)
        .meta({
          description:
            'How long a backed-off endpoint gets no attempt; then one event probes it. Doubled after each failed probe.',
          examples: [30000],
        }),
      maxCoolDownMs: z
        .int()
        .min(10)
        .max(24 * HOUR)
        .default(10 * MINUTE)
        .meta({ description: 'The longest cool-down.', examples: [600000] }),
    })
    .prefault({})
    .meta({
      description:
        'Backing off an endpoint (or outbound folder) that keeps failing: its events go to their next retry step without an attempt until the cool-down ends (docs/events.md "Backing off a failing endpoint"). Per worker.',
    }),
});

export type EventsConfig = z.infer<typeof eventsSchema>;

const secretReferenceSchema = z
  .union([
    z.strictObject({
      env: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
        .meta({ description: 'Environment variable holding the whsec_ secret.' }),
    }),
    z.strictObject({
      file: z.string().min(1).meta({ description: 'File (mode 600) holding the whsec_ secret.' }),
    }),
  ])
  .meta({
    description: 'Where the signing secret (`whsec_` + base64) is read at start-up.',
    examples: [{ env: 'ACME_WEBHOOK_SECRET' }, { file: '/run/secrets/acme-webhook' }],
  });

export type SecretReference = z.infer<typeof secretReferenceSchema>;

export const webhookSchema = z.strictObject({
  id: z
    .string()
    .regex(
      /^[A-Za-z0-9._-]{1,64}$/,
      'Expected 1 to 64 letters, digits, dots, dashes or underscores',
    )
    .optional()
    .meta({
      description:
        "The endpoint's name within its business, unique there; shown by `events status`, and how the history and `events disable`/`enable` name it (without one, its full URL). Retries waiting on the broker name their endpoint by it, so they follow a change of `url`. Without it the endpoint is known by its URL: after a URL change its waiting retries are dead-lettered (`endpoint-removed`) and `events replay` sends them to the business's current endpoints.",
      examples: ['main', 'erp-connector'],
    }),
  url: z.url({ protocol: /^https?$/ }).meta({
    description:
      'Endpoint receiving POSTs. https in production (http only with allowPrivateNetwork). Never logged whole: logs show its host.',
    examples: ['https://connector.acme.example/warehouse-events'],
  }),
  secret: z.union([secretReferenceSchema, z.array(secretReferenceSchema).min(1).max(2)]).meta({
    description:
      'Signing secret, or a list of two during a rotation (both sign every delivery; the receiver accepts either).',
    examples: [{ env: 'ACME_WEBHOOK_SECRET' }, [{ env: 'ACME_OLD' }, { env: 'ACME_NEW' }]],
  }),
  events: z
    .array(z.string().regex(/^[a-z0-9*][a-z0-9.*-]*$/i, 'Expected an event type pattern'))
    .min(1)
    .default(['**'])
    .meta({
      description:
        'Event types delivered here: `*` matches within one dot-separated part, `**` across parts. Default: every event.',
      examples: [['sales-order.*', 'purchase-order.received']],
    }),
  enabled: z.boolean().default(true).meta({
    description:
      'false: nothing is delivered here; retries waiting for it are dead-lettered (`endpoint-removed`) when they come due.',
  }),
  allowPrivateNetwork: z.boolean().default(false).meta({
    description:
      'Production only: allow http:// and destinations resolving to loopback, private, link-local or metadata addresses (an endpoint inside your own network). Development always allows them.',
  }),
});

export type WebhookConfig = z.infer<typeof webhookSchema>;

// Optional rather than defaulted, so tenants built in code (tests, tools) need not spell it out.
export const webhooksSchema = z
  .array(webhookSchema)
  .superRefine((webhooks, ctx) => {
    const seen = new Set<string>();
    webhooks.forEach((webhook, i) => {
      if (webhook.id === undefined) return;
      if (seen.has(webhook.id))
        ctx.addIssue({
          code: 'custom',
          path: [i, 'id'],
          message: `Another endpoint of this business has id ${webhook.id}`,
        });
      seen.add(webhook.id);
    });
  })
  .optional()
  .meta({ description: "The business's webhook endpoints (docs/events.md). Default: none." });

export const operatorWebhookSchema = webhookSchema
  .omit({ id: true })
  .extend({
    url: webhookSchema.shape.url.meta({
      description:
        "The operator's endpoint receiving POSTs. https in production (http only with allowPrivateNetwork). Never logged whole: logs show its host.",
      examples: ['https://ops.example/warehouse-ingest'],
    }),
    secret: webhookSchema.shape.secret.meta({
      description:
        "Its signing secret (its own, not a business's), or a list of two during a rotation.",
      examples: [{ env: 'OPERATOR_WEBHOOK_SECRET' }, { file: '/run/secrets/operator-webhook' }],
    }),
    events: webhookSchema.shape.events.meta({
      description:
        'Operator event types sent here: `endpoint.disabled`, `message.attempt.exhausted` (patterns as for a business). Default: both.',
      examples: [['endpoint.disabled']],
    }),
  })
  .meta({
    description:
      'The operator webhook: receives `endpoint.disabled` (an endpoint answered 410, or `events disable`) and `message.attempt.exhausted` (an event dead-lettered after its last scheduled attempt), as Standard Webhooks signed with its own secret, through the same SSRF rules, retry schedule and dead-letter queue as every endpoint (docs/events.md "Operator webhook"). Nothing about its own failures is sent to it.',
    examples: [
      {
        url: 'https://ops.example/warehouse-ingest',
        secret: { env: 'OPERATOR_WEBHOOK_SECRET' },
        events: ['endpoint.disabled', 'message.attempt.exhausted'],
      },
    ],
  });

export type OperatorWebhookConfig = z.infer<typeof operatorWebhookSchema>;

export const eventsSchema = eventsDeliverySchema.extend({
  operatorWebhook: operatorWebhookSchema.optional(),
});
