import { z } from 'zod';
import { secretRef } from '../secret-ref.js';
import { DEFAULT_TIMEOUT_MS, TIMEOUT_DESCRIPTION } from '../store.js';

/** A pipeline's \`source\` for an SFTP server: every option of this store, described once. */
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
    timeoutMs: z
      .int()
      .positive()
      .default(DEFAULT_TIMEOUT_MS)
      .meta({ description: TIMEOUT_DESCRIPTION }),
  })
  .meta({ title: 'sftp', description: 'A folder on an SFTP server.' });
