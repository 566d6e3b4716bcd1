/**
 * The `portal` part of the configuration schema (assembled by schema.ts): whether the
 * partner portal is served, the secret its sign-in links are signed with, how long links and
 * sessions last, and the operators who may sign in with a password. Every field is described once; the values of the defaults are in
 * config/default.yaml (off) and config/development.yaml (on).
 */
import { z } from 'zod';
import { scryptHashSchema } from './scrypt-hash.js';

const HOUR = 3_600_000;

const portalSecretSchema = z
  .union([
    z.strictObject({
      env: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
        .meta({ description: 'Environment variable holding the portal secret.' }),
    }),
    z.strictObject({
      file: z.string().min(1).meta({ description: 'File (mode 600) holding the portal secret.' }),
    }),
  ])
  .optional()
  .meta({
    description:
      "Where the secret that signs sign-in links and forms' CSRF tokens is read at start-up (at least 32 characters); every instance of a fleet and the `portal-link` command need the same one. Required in production when the portal is enabled. Unset outside production: a random secret is created once in `<dataDirectory>/portal-secret` (mode 600) and used by the service and `portal-link` on that data directory.",
    examples: [{ env: 'PORTAL_SECRET' }, { file: '/run/secrets/portal' }],
  });

const operatorSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9._@-]{1,64}$/)
    .meta({
      description:
        'The name the operator signs in with (letters, digits, `.`, `_`, `@`, `-`; up to 64); shown in the banner and the logs.',
      examples: ['ops'],
    }),
  passwordHash: scryptHashSchema.meta({
    description:
      "The operator's password as a scrypt hash (PHC format), printed by `warehouse-ingest hash-key -`; the password is never stored in clear.",
  }),
});

const signInLimitsSchema = z
  .strictObject({
    perAddress: z
      .int()
      .min(1)
      .max(10_000)
      .meta({
        description:
          'Operator sign-ins one client address may try in `windowSeconds`, whatever the names (a token bucket); past it, 429 with Retry-After before any password is hashed. The address is the one `http.trustProxyHops` gives.',
        examples: [10],
      }),
    failuresPerName: z
      .int()
      .min(1)
      .max(1_000)
      .meta({
        description:
          "Wrong passwords for one name from one address in `windowSeconds` before that name is refused from that address (429). Counted per name and address together, so that guessing an operator's password from elsewhere never locks the operator out.",
        examples: [5],
      }),
    overall: z
      .int()
      .min(1)
      .max(100_000)
      .meta({
        description:
          'Operator sign-ins tried in `windowSeconds` by every address together, across the fleet (on Redis): how many passwords a flood from many addresses gets hashed at most. Past it, 429 for every address until tries refill.',
        examples: [60],
      }),
    windowSeconds: z
      .int()
      .min(1)
      .max(86_400)
      .meta({
        description: 'The window of the three limits above (each refills over it).',
        examples: [60],
      }),
  })
  .meta({
    description:
      'Limits on `POST /portal/operator`, checked in the shared state (`sharedState`: every instance counts against the same ones on Redis) before any password is hashed. Passwords are then hashed on a thread of their own, one at a time, at most 32 waiting per instance (more: 429), so sign-ins never hold up API-key checks, file access or DNS on the thread pool. See docs/portal.md.',
  });

export const portalSchema = z
  .strictObject({
    enabled: z.boolean().meta({
      description:
        'Serve the partner portal under `/portal` on the partner-facing listener. Off by default in production, on in development; it shows what the history keeps, so it needs `history.enabled`.',
    }),
    secret: portalSecretSchema,
    sessionTtlMs: z
      .int()
      .min(60_000)
      .max(7 * 24 * HOUR)
      .meta({
        description:
          'How long a portal session lasts after sign-in; after it, a new link is needed. Sessions are kept in the shared state (`sharedState`): in memory with one instance, on Redis read by every instance of a fleet.',
        examples: [28_800_000],
      }),
    maxLinkTtlMs: z
      .int()
      .min(60_000)
      .max(30 * 24 * HOUR)
      .meta({
        description:
          'The longest validity `portal-link --ttl` may give a sign-in link; a longer one is refused.',
        examples: [86_400_000],
      }),
    operators: z
      .array(operatorSchema)
      .refine((list) => new Set(list.map((o) => o.name)).size === list.length, {
        message: 'Two operators have the same name',
      })
      .meta({
        description:
          "The people who run the service and may sign in at `/portal/operator` with a name and password: they see every business's pages, each drop's inputs with Reprocess, and the events' dead letters with Replay. Empty: no operator sign-in. A reload (SIGHUP) applies changes: every page checks its session's operator against the list, so a removed operator's session ends at its next page (after a restart too).",
      }),
    signInLimits: signInLimitsSchema,
  })
  .meta({
    description:
      "The partner portal: a business's batches and records in a browser, signed in with a single-use link from `warehouse-ingest portal-link` instead of an API key; and for the operators configured here, every business's pages, the drops' inputs and the events' dead letters. See docs/portal.md.",
  });

export type PortalConfig = z.infer<typeof portalSchema>;
