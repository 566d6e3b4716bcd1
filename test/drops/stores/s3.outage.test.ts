import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createS3Drop } from '../../../src/stores/s3/index.js';
import { startS3rver } from '../../support/s3rver.js';
import { describeStoreOutages } from './outage-contract.js';

describeStoreOutages('s3 (s3rver)', 's3-outage', async () => {
  const s3 = await startS3rver();
  return {
    store: createS3Drop({
      bucket: s3.bucket,
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      timeoutMs: 2000,
      maxAttempts: 2,
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
    stop: () => s3.kill(),
    restart: () => s3.restart(),
    cleanup: () => s3.stop(),
  };
});
