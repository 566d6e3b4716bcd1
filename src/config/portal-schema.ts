/**
 * The `portal` part of the configuration schema (assembled by schema.ts): whether the
 * partner portal is served, the secret its sign-in links are signed with, and how long links and
 * sessions last. Every field is described once; the values of the defaults are in
 * config/default.yaml (off) and config/development.yaml (on).
 */
import { z } from 'zod';

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
          'How long a portal session lasts after sign-in; after it, a new link is needed. Sessions are kept in the memory of the instance that made them.',
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
  })
  .meta({
    description:
      "The partner portal: a business's batches and records in a browser, signed in with a single-use link from `warehouse-ingest portal-link` instead of an API key. See docs/portal.md.",
  });

export type PortalConfig = z.infer<typeof portalSchema>;
