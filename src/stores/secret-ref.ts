import { z } from 'zod';

/**
 * How a store's configuration names a secret: by environment variable or by file, never inline.
 * Resolved by the store table (index.ts) before an adapter is created.
 */
export const secretRef = z
  .union(
    [
      z.strictObject({
        env: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
          .meta({ description: 'The environment variable that holds the secret.' }),
      }),
      z.strictObject({
        file: z.string().min(1).meta({
          description:
            'A file that holds the secret (e.g. a mounted secret); refused when others may read it or its group may write it (`chmod 600`; a mounted secret at `0440` may pass, see docs/configuration.md#which-secret-files-are-private).',
        }),
      }),
    ],
    {
      // The union's own "Invalid value" says neither what is wrong nor what to write instead.
      error: (issue) =>
        typeof issue.input === 'string' || typeof issue.input === 'number'
          ? 'A secret must not be written in the pipeline file: reference it by environment variable ({ env: NAME }) or by file ({ file: /path/to/secret }, chmod 600), and remove the value from the file (and its history)'
          : 'Expected a secret reference: { env: NAME } (an environment variable holding the secret) or { file: /path/to/secret } (a file holding it, chmod 600)',
    },
  )
  .meta({
    description: 'A secret is named, never written inline: `{ env: NAME }` or `{ file: /path }`.',
  });
export type SecretRef = z.infer<typeof secretRef>;

/**
 * Reads a secret a source names (`SecretRef`) for `field` (said in the start-up error when it
 * cannot be read); `isSecret: false` for a public file such as known_hosts (no permission check).
 */
export type ResolveSecret = (ref: SecretRef, field: string, isSecret?: boolean) => string;
