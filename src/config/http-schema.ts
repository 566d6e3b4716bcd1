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
        'Per business, batches in flight at once (the bulkhead): from the first byte of the body (received, decoded, validated, published) to the answer; an event resend or test event (from the API or the portal) holds one while it runs. One more is refused at once with `429`, `Retry-After: 1`.',
    }),
    authThrottle: z
      .strictObject({
        windowSeconds: positiveInt('The window failed logins are counted in.'),
        maxFailuresPerClient: positiveInt(
          'Failed logins for one business id from one client address within the window; past it, `429` for that pair until the oldest failure leaves the window. Keyed by the pair, so one misconfigured connector behind a shared egress (a NAT, an integration platform) does not lock out its neighbours, however often it fails.',
        ),
        maxBusinessIdsPerAddress: z.int().min(0).meta({
          description:
            'The per-address ceiling across business ids: how many business ids may fail to log in from one client address within the window (each counts once, however often it failed: its own failures are bounded by `maxFailuresPerClient`). Past it, `429` for an unverified attempt from that address for any other business id, until the oldest leaves the window; the ids already failing keep their own limit, and a credential verified before still passes. It stops a spray across many ids, but also refuses a not-yet-verified business behind the same address (a NAT, an integration platform) while it holds. `0`: no ceiling, for an egress many tenants share (guessing is then bounded per id only). Refusals are counted in `warehouse_ingest_login_refusals_total{reason}`.',
        }),
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
      .meta({
        description:
          'The `Idempotency-Key` store. `maxEntries` and `maxBytes` bound the memory store (the default); on Redis (`sharedState.redis`), keys live `ttlSeconds` and an answer over `maxBytes` is not stored.',
      }),
  })
  .meta({
    description:
      'Limits and abuse protection, per business. Counters live in memory, per process, unless `sharedState.redis` is set: then every instance using that Redis shares them. See docs/api.md#limits-and-abuse-protection.',
  });

/** Where the facade's state (idempotency records, rate-limit buckets, failed logins) lives. */
export const sharedStateSchema = z
  .strictObject({
    redis: z
      .strictObject({
        url: z
          .string()
          .regex(/^rediss?:\/\//, 'Expected a redis:// or rediss:// URL')
          .optional()
          .meta({
            description:
              'Redis URL (`redis://host:6379/0`, or `rediss://` for TLS); set, the state is shared by every instance using the same Redis and `keyPrefix`. Unset (and no `sentinels`): in memory, per process. Never logged with its password; environment variable `REDIS_URL`.',
            examples: ['redis://redis:6379/0'],
          }),
        passwordFile: z
          .string()
          .min(1)
          .optional()
          .meta({
            description:
              "A file holding Redis's password (private: `chmod 600`, or a mounted secret's `0440`), instead of a password in the URL.",
            examples: ['/run/secrets/redis-password'],
          }),
        sentinels: z
          .array(
            z
              .string()
              .regex(
                /^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]/@]+):\d{1,5}$/,
                'Expected host:port (an IPv6 address in brackets)',
              ),
          )
          .min(1)
          .optional()
          .meta({
            description:
              "Redis Sentinel instead of `url`: the sentinels to ask (`host:port`, any of them may be down), which tell where the master named `masterName` is. After a failover the service follows the new master; keyed requests are answered `503` with `Retry-After` meanwhile. Claims and answers are relied on once every replica connected to the master acknowledged them (`WAIT`). In the environment: `REDIS_SENTINELS=host:port,host:port`. Redis's own password from `passwordFile`, the sentinels' from `sentinelPasswordFile`. See docs/operations-instances.md#redis-sentinel.",
            examples: [['sentinel-1:26379', 'sentinel-2:26379', 'sentinel-3:26379']],
          }),
        masterName: z
          .string()
          .min(1)
          .optional()
          .meta({
            description:
              'The master set the sentinels monitor (`sentinel monitor <name> …`); required with `sentinels`. Environment variable `REDIS_SENTINEL_MASTER`.',
            examples: ['ingest'],
          }),
        username: z
          .string()
          .min(1)
          .optional()
          .meta({
            description:
              "With `sentinels`: the Redis ACL user the service signs in as on the master (its password from `passwordFile`). With `url`, the user is the URL's (`redis://user:password@host/0`). Environment variable `REDIS_USERNAME`.",
            examples: ['warehouse-ingest'],
          }),
        db: z
          .int()
          .min(0)
          .max(15)
          .optional()
          .meta({
            description:
              "With `sentinels`: the database number on the master (`SELECT`). @default 0. With `url`, the number is the URL's path (`redis://host:6379/3`). Environment variable `REDIS_DB`.",
            examples: [3],
          }),
        sentinelPasswordFile: z
          .string()
          .min(1)
          .optional()
          .meta({
            description:
              "A file holding the sentinels' password (`requirepass` of the sentinels; private, as `passwordFile`), when they require one.",
            examples: ['/run/secrets/redis-sentinel-password'],
          }),
        keyPrefix: z
          .string()
          .max(128)
          .meta({
            description:
              'Put before every key, so that services sharing one Redis stay apart; instances that must share state use the same prefix.',
            examples: ['warehouse-ingest:'],
          }),
        commandTimeoutMs: z.int().positive().max(60_000).meta({
          description:
            'A Redis command not answered within this fails: an `Idempotency-Key` request is answered `503` with `Retry-After`; limits fall back to this instance meanwhile. The connection it was sent on is replaced by a new one.',
        }),
      })
      .meta({ description: 'The shared store on Redis. See docs/operations-instances.md.' }),
  })
  .meta({
    description:
      'Where `Idempotency-Key` records, rate-limit buckets and failed logins are kept: in memory (the default), or on Redis, shared by several instances behind a load balancer.',
  });

export const httpSchema = z
  .strictObject({
    host: z
      .string()
      .min(1)
      .meta({ description: 'Listen address.', examples: ['127.0.0.1'] }),
    port: z
      .int()
      .min(0)
      .max(65535)
      .meta({ description: 'Listen port (0: a free port the system picks).' }),
    bodyLimitBytes: z.int().positive().meta({
      description:
        'Largest request body; a larger one is answered `413` before it is read (chunked: as soon as it passes).',
    }),
    maxConcurrentDecodes: z.int().positive().meta({
      description:
        "Compressed bodies (`Content-Encoding`) decoded at once, by the whole process: each may take up to `bodyLimitBytes` (twice, while its output is joined), so this bounds their memory. One more is answered `503` with `Retry-After: 1` at once, never queued. Decoding also holds one of its business's `abuse.maxInFlightBatches` slots.",
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
    maxConnections: z.int().min(1).meta({
      description:
        'Connections the partner-facing listener holds at once (Node\'s `server.maxConnections`), TLS handshakes in progress and idle keep-alive connections included. One more is closed as soon as it is accepted, unanswered: counted in `warehouse_ingest_http_connections_dropped_total{reason="limit"}` and logged at `warn` (a line a minute at most). Keep it, with `admin.maxConnections`, well under the process\'s descriptor limit (`ulimit -n`): the admin listener, the broker and the drops need descriptors too.',
    }),
    publicUrls: z
      .array(z.url({ protocol: /^https?$/ }))
      .default([])
      .meta({
        description:
          'The URLs partners reach this service at (e.g. behind a TLS-terminating proxy), listed as `servers` in /openapi.json so generated clients and "Try it out" use them. Empty: the document\'s own origin.',
        examples: [['https://ingest.example.com']],
      }),
    trustProxyHops: z.int().min(0).max(10).meta({
      description:
        "Proxies in front of the service. `0`: the client address is the socket's; `n`: the n-th address from the right of `X-Forwarded-For` (only what your own proxies appended can be trusted).",
    }),
    tls: z
      .strictObject({
        cert: z
          .string()
          .min(1)
          .meta({
            description:
              'PEM certificate chain file (the server certificate first); relative to the working directory.',
            examples: ['/etc/warehouse-ingest/tls/cert.pem'],
          }),
        key: z
          .string()
          .min(1)
          .meta({
            description:
              'PEM private key file, private (`chmod 600`, or a mounted secret at `0440`); relative to the working directory.',
            examples: ['/etc/warehouse-ingest/tls/key.pem'],
          }),
        http2: z.boolean().default(false).meta({
          description:
            "Offer HTTP/2 as well (ALPN `h2` and `http/1.1`): a client that asks for `h2` gets it, any other keeps HTTP/1.1 on the same port, under the same limits. Off by default, so that an upgrade does not change the protocol partners' clients negotiate (curl, Java, .NET and Go clients ask for `h2` when offered). An h2 connection carries at most 32 requests at once; one not received whole within `requestTimeoutMs` is reset, without an answer. See docs/operations-instances.md#http2.",
        }),
      })
      .optional()
      .meta({
        description:
          'Serve HTTPS (HTTP/1.1 over TLS, and HTTP/2 with `http2`) on `host:port` with this certificate; unset, plain HTTP (for example behind a TLS-terminating proxy). The admin listener stays plain HTTP. See docs/operations-instances.md#https.',
      }),
    apiDocs: z.enum(['public', 'admin']).meta({
      description:
        '`public`: `/docs` and `/openapi.json` on the partner-facing port, without credentials. `admin`: only on the admin listener (the partner-facing port answers `404`).',
    }),
    abuse: abuseSchema,
  })
  .meta({ description: 'The HTTP server: listen address and request limits.' });
