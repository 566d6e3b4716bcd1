import { z } from 'zod';
import { secretRef } from '../secret-ref.js';
import { DEFAULT_TIMEOUT_MS, TIMEOUT_DESCRIPTION } from '../store.js';

/** A pipeline's \`source\` for an S3 bucket: every option of this store, described once. */
export const s3Source = z
  .strictObject({
    type: z.literal('s3').meta({ description: 'The store type.' }),
    bucket: z.string().min(1).meta({ description: 'The bucket the partner drops into.' }),
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
    timeoutMs: z
      .int()
      .positive()
      .default(DEFAULT_TIMEOUT_MS)
      .meta({ description: TIMEOUT_DESCRIPTION }),
  })
  .meta({
    title: 's3',
    description:
      'A bucket (and prefix) on S3 or an S3-compatible server. One worker per pipeline works on it at a time (the lease).',
  });
