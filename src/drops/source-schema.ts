import { z } from 'zod';

/**
 * The `source` of a pipeline file: one schema per store type (local, sftp, s3), and the secret
 * references they take. Part of the pipeline schema (definition-schema.ts).
 */

const secretRef = z
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
            'A file that holds the secret (e.g. a mounted secret); refused when group or others may read it (`chmod 600`).',
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

const DEFAULT_TIMEOUT = 'Time limit of every call to the store, in ms.';

export const localSource = z
  .strictObject({
    type: z.literal('local').meta({ description: 'The store type.' }),
    path: z
      .string()
      .min(1)
      .meta({ description: 'The drop folder.', examples: ['/srv/drops/acme'] }),
    watch: z
      .strictObject({
        enabled: z.boolean().default(true).meta({
          description:
            'Look at the drop as soon as a file appears or is renamed in its top folder (with a `pollIntervalMs` schedule; a `cron` schedule keeps its times). The poll still runs and stays the source of truth.',
        }),
        usePolling: z.boolean().default(false).meta({
          description:
            "Watch by polling the folder instead of the kernel's file events: for network mounts (NFS, SMB, most FUSE), which do not report files written by other machines.",
        }),
        pollingIntervalMs: z
          .int()
          .min(100)
          .max(60_000)
          .default(1_000)
          .meta({ description: 'How often a polling watch looks (`usePolling`).' }),
      })
      .prefault({})
      .meta({
        description:
          "Early looks when files appear (chokidar); the worker's own folders and subfolders are never watched. See docs/file-drops.md#watching-local-drops.",
      }),
  })
  .meta({ title: 'local', description: 'A folder on this machine (or a mounted share).' });

export const sftpSource = z
  .strictObject({
    type: z.literal('sftp').meta({ description: 'The store type.' }),
    host: z.string().min(1).meta({ description: 'The SFTP server.' }),
    port: z.int().min(1).max(65535).default(22).meta({ description: 'SSH port.' }),
    username: z.string().min(1).meta({ description: 'SSH user.' }),
    password: secretRef.optional().meta({ description: 'Password (a secret reference).' }),
    privateKey: secretRef
      .optional()
      .meta({ description: 'Private key (a secret reference); this or `password` is required.' }),
    passphrase: secretRef
      .optional()
      .meta({ description: "The private key's passphrase (a secret reference)." }),
    hostKeyFingerprints: z
      .array(
        z
          .string()
          .regex(
            /^SHA256:[A-Za-z0-9+/]{43}=?$/,
            'Expected SHA256:<base64> as ssh-keygen -l prints it',
          ),
      )
      .optional()
      .meta({
        description:
          'Pinned host keys as `ssh-keygen -l` prints them (`SHA256:…`). This or `knownHosts` is required: host keys are never trusted blindly.',
        examples: [['SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s']],
      }),
    knownHosts: z
      .string()
      .min(1)
      .optional()
      .meta({ description: 'A known_hosts file (it may be public).' }),
    path: z.string().min(1).meta({ description: 'The drop folder on the server.' }),
    timeoutMs: z.int().positive().default(30_000).meta({ description: DEFAULT_TIMEOUT }),
  })
  .meta({ title: 'sftp', description: 'A folder on an SFTP server.' });

export const s3Source = z
  .strictObject({
    type: z.literal('s3').meta({ description: 'The store type.' }),
    bucket: z.string().min(1).meta({ description: 'The bucket.' }),
    prefix: z.string().default('').meta({ description: 'Key prefix of the drop, e.g. `acme/`.' }),
    region: z
      .string()
      .min(1)
      .meta({ description: 'The region.', examples: ['eu-west-2'] }),
    endpoint: z
      .url()
      .optional()
      .meta({
        description: 'An S3-compatible endpoint instead of AWS.',
        examples: ['http://127.0.0.1:4568'],
      }),
    forcePathStyle: z
      .boolean()
      .default(false)
      .meta({ description: 'Path-style URLs (most S3-compatible servers need them).' }),
    accessKeyId: secretRef.optional().meta({
      description: "Access key id (a secret reference); default: the SDK's credential chain.",
    }),
    secretAccessKey: secretRef
      .optional()
      .meta({ description: 'Secret access key (a secret reference).' }),
    timeoutMs: z.int().positive().default(30_000).meta({ description: DEFAULT_TIMEOUT }),
  })
  .meta({
    title: 's3',
    description:
      'A bucket (and prefix) on S3 or an S3-compatible server. One worker per pipeline works on it at a time (the lease).',
  });
