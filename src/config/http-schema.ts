import { z } from 'zod';

/**
 * The `http` area of the configuration: listen address, request limits, and the per-business
 * abuse protection. Every field is described here once; docs/configuration.md and
 * config/config.schema.json are generated from these descriptions (`npm run docs:generate`).
 */

const positiveInt = (description: string) => z.int().positive().meta({ description });

const abuseSchema = z
  .strictObject({
    rateLimit: z
      .strictObject({
        requests: positiveInt('Requests a business may send at once (the token bucket size).'),
        windowSeconds: positiveInt(
          'The bucket refills `requests` tokens over this many seconds (one every `windowSeconds / requests`).',
        ),
      })
      .meta({
        description:
          'Per business, a token bucket: up to `requests` at once, then one every `windowSeconds / requests`; more is answered `429` with `Retry-After`.',
      }),
    maxInFlightBatches: z.int().positive().meta({
      description:
        'Per business, batches being validated or published at once (the bulkhead); one more is refused at once with `429`, `Retry-After: 1`.',
    }),
    authThrottle: z
      .strictObject({
        windowSeconds: positiveInt('The window failed logins are counted in.'),
        maxFailuresPerClient: positiveInt(
          'Failed logins for one business id from one client address within the window; past it, `429` for that pair until the oldest failure leaves the window. Keyed by the pair, so one misconfigured connector behind a shared egress (a NAT, an integration platform) does not lock out its neighbours.',
        ),
        maxFailuresPerAddress: positiveInt(
          'Failed logins from one client address for any business ids within the window (a higher ceiling, against guessing across ids); past it, `429` for every unverified attempt from it.',
        ),
        failuresBeforeSlowdown: z.int().min(0).meta({
          description:
            'Failed logins for one business id within the window before each new unverified attempt for it is slowed down.',
        }),
        slowdownStepMs: z.int().min(0).meta({
          description:
            'An unverified attempt waits `slowdownStepMs × (failures − failuresBeforeSlowdown + 1)` ms; it is never refused, so the real business is not locked out.',
        }),
        maxSlowdownMs: z
          .int()
          .min(0)
          .max(60_000)
          .meta({ description: 'The longest an unverified attempt is slowed down.' }),
      })
      .meta({
        description:
          'Failed-login throttle: only well-formed credentials that fail verification count; a credential verified in the last 5 minutes skips it.',
      }),
    idempotency: z
      .strictObject({
        ttlSeconds: positiveInt('How long an `Idempotency-Key` and its answer are kept.'),
        maxEntries: positiveInt('Most keys kept; the least recently used are forgotten first.'),
        maxBytes: positiveInt('Most bytes of stored answers kept.'),
      })
      .meta({ description: 'The `Idempotency-Key` store: in memory, per process.' }),
  })
  .meta({
    description:
      'Limits and abuse protection, per business. Counters live in memory, per process: with several instances behind a balancer, each enforces its own share. See docs/api.md#limits-and-abuse-protection.',
  });

export const httpSchema = z
  .strictObject({
    host: z
      .string()
      .min(1)
      .meta({ description: 'Listen address.', examples: ['127.0.0.1'] }),
    port: z.int().min(0).max(65535).meta({ description: 'Listen port (0: any free port).' }),
    bodyLimitBytes: z.int().positive().meta({
      description:
        'Largest request body; a larger one is answered `413` before it is read (chunked: as soon as it passes).',
    }),
    maxRecordsPerBatch: z.int().positive().meta({
      description:
        'Most records in one batch; more is answered `413` before any record is validated.',
    }),
    requestTimeoutMs: z.int().positive().meta({
      description:
        "Time to receive a whole request (Node's `requestTimeout`); a slower one is answered `408`.",
    }),
    maxHeaderBytes: z.int().min(1024).max(1_048_576).meta({
      description:
        "Largest request header section (Node's `maxHeaderSize`); a larger one is answered `431`.",
    }),
    trustProxyHops: z.int().min(0).max(10).meta({
      description:
        "Proxies in front of the service. `0`: the client address is the socket's; `n`: the n-th address from the right of `X-Forwarded-For` (only what your own proxies appended can be trusted).",
    }),
    abuse: abuseSchema,
  })
  .meta({ description: 'The HTTP server: listen address and request limits.' });
