import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { createS3Drop } from '../../src/stores/s3/index.js';
import type { StoreFixture } from '../stores/store-contract.js';
import { startS3rver } from './s3rver.js';

/** A drop in a fresh s3rver bucket: the store under test, and the test client to put files in behind its back. */
export async function s3Fixture(): Promise<StoreFixture> {
  const s3 = await startS3rver();
  return {
    store: createS3Drop({
      bucket: s3.bucket,
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    }),
    async put(name, content) {
      await s3.client.send(
        new PutObjectCommand({
          Bucket: s3.bucket,
          Key: name,
          Body: content,
          ContentLength: Buffer.byteLength(content),
        }),
      );
    },
    async has(name) {
      try {
        await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: name }));
        return true;
      } catch (error) {
        if ((error as Error).name === 'NotFound') return false;
        throw error;
      }
    },
    cleanup: () => s3.stop(),
  };
}
