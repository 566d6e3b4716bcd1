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
          "The people who run the service and may sign in at `/portal/operator` with a name and password: they see every business's pages, each drop's inputs with Reprocess, and the events' dead letters with Replay. Empty: no operator sign-in. Read at start-up (a reload does not change it).",
      }),
  })
  .meta({
    description:
      "The partner portal: a business's batches and records in a browser, signed in with a single-use link from `warehouse-ingest portal-link` instead of an API key; and for the operators configured here, every business's pages, the drops' inputs and the events' dead letters. See docs/portal.md.",
  });

export type PortalConfig = z.infer<typeof portalSchema>;
