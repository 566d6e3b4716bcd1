import type { z } from 'zod';
import type { ResolveSecret } from '../secret-ref.js';
import type { s3Source } from './schema.js';
import type { _Object, S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { S3DropError, s3DropError } from './errors.js';
import {
  assertSafeName,
  DEFAULT_TIMEOUT_MS,
  mapStreamErrors,
  type DropEntry,
  type DropStore,
} from '../store.js';

export { S3DropError } from './errors.js';

export const NAME = 's3';

const BUFFERED_UPLOAD_BYTES = 8 * 1024 * 1024;

export interface S3DropOptions {
  /** The bucket (the fields of this interface are described in `s3Source`, schema.ts). */
  bucket: string;
  /**
   * The drop folder inside the bucket, e.g. `drops/acme/`. Names stay relative to it, so one
   * bucket can hold many partners' drops. A missing trailing `/` is added; `''` is the whole bucket.
   * @default ''
   */
  prefix?: string;
  /** The bucket's region (S3 signs requests per region). */
  region: string;
  /**
   * Endpoint of an S3-compatible server (MinIO, s3rver, Ceph…), e.g. `http://127.0.0.1:4568`.
   * @default the AWS endpoint for `region`
   */
  endpoint?: string;
  /**
   * Address buckets as `endpoint/bucket/key` instead of `bucket.endpoint/key`: most
   * S3-compatible servers need this because they have no per-bucket DNS names.
   * @default false
   */
  forcePathStyle?: boolean;
  /**
   * Static credentials (resolved from env names by the config, never written in pipeline files).
   * @default the SDK's default chain: env variables, shared config files, SSO, container or instance role
   */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /**
   * Limit for each attempt of each request: connecting, getting the response headers, and any
   * pause while a body streams. Without it a half-open connection hangs a poll forever. A reader
   * that stops pulling a `read` stream for longer (backpressure) also ends it with a TimeoutError:
   * spool first, then parse.
   * @default 30000
   */
  timeoutMs?: number;
  /**
   * Attempts per request (the SDK retries throttling, 5xx and network errors with backoff).
   * @default 3
   */
  maxAttempts?: number;
}

/** HeadObject answers a bare 404 (`NotFound`); GetObject and CopyObject name it `NoSuchKey`. */
const isMissingKey = (error: unknown) =>
  error instanceof Error && (error.name === 'NotFound' || error.name === 'NoSuchKey');

const CONTENT_TYPES: Record<string, string> = { json: 'application/json', csv: 'text/csv' };

/** Encodes a key for `x-amz-copy-source`, segment by segment so the `/`s stay separators. */
const encodeKey = (key: string) => key.split('/').map(encodeURIComponent).join('/');

type S3Sdk = typeof import('@aws-sdk/client-s3');

/**
 * The AWS SDK's S3 client, loaded by the first S3 request: ~22 MiB of resident memory and
 * dozens of files read at start-up that a service without S3 drops never needs.
 */
let sdkModule: Promise<S3Sdk> | undefined;
const s3Sdk = () => (sdkModule ??= import('@aws-sdk/client-s3'));

/**
 * A drop in an S3 bucket (or an S3-compatible server) under a key prefix. S3 has no folders:
 * `list` groups keys at `/` so a "folder" behaves like a local one, and writing `a/b/c` needs no mkdir.
 */
export function createS3Drop(options: S3DropOptions): DropStore {
  const { bucket } = options;
  const prefix = options.prefix ? options.prefix.replace(/\/*$/, '/') : '';
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const settings: S3ClientConfig = {
    region: options.region,
    endpoint: options.endpoint,
    forcePathStyle: options.forcePathStyle ?? false,
    credentials: options.credentials,
    maxAttempts: options.maxAttempts ?? 3,
    // The SDK's default (WHEN_SUPPORTED) sends streamed bodies with aws-chunked checksum
    // framing, which S3-compatible servers may store inside the object; only ask for checksums
    // where S3 requires them.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: {
      connectionTimeout: timeoutMs,
      // Until the response headers; without throwOnRequestTimeout the SDK only logs a warning.
      requestTimeout: timeoutMs,
      throwOnRequestTimeout: true,
      // Silence on the socket, also while a body streams to the caller.
      socketTimeout: timeoutMs,
    },
  };
  // The SDK is loaded by the first request, not at start-up (see `s3Sdk`).
  let connecting: Promise<{ sdk: S3Sdk; client: S3Client }> | undefined;
  const connect = () =>
    (connecting ??= s3Sdk().then((sdk) => ({ sdk, client: new sdk.S3Client(settings) })));

  const keyOf = (name: string) => {
    assertSafeName(name);
    return prefix + name;
  };

  /** Runs one request, turning SDK errors into ones that name bucket and key. */
  async function send<T>(
    operation: string,
    key: string,
    request: (s3: { sdk: S3Sdk; client: S3Client }) => Promise<T>,
  ): Promise<T> {
    try {
      return await request(await connect());
    } catch (error) {
      throw s3DropError(operation, bucket, key, error);
    }
  }

  async function head(name: string, key: string): Promise<DropEntry | undefined> {
    try {
      const { sdk, client } = await connect();
      const facts = await client.send(new sdk.HeadObjectCommand({ Bucket: bucket, Key: key }));
      return {
        name,
        size: facts.ContentLength ?? 0,
        modifiedMs: facts.LastModified?.getTime() ?? 0,
      };
    } catch (error) {
      if (isMissingKey(error)) return undefined;
      throw s3DropError('HeadObject', bucket, key, error);
    }
  }

  const toEntry = (object: _Object): DropEntry => ({
    name: object.Key!.slice(prefix.length),
    size: object.Size ?? 0,
    modifiedMs: object.LastModified?.getTime() ?? 0,
  });

  return {
    type: NAME,
    where: `s3://${bucket}/${prefix}`,
    // No rename in S3: a copy then a delete, which two workers could both do. Claims use a lease.
    atomicRename: false,

    async list(folder = '') {
      const listPrefix = folder ? `${keyOf(folder).replace(/\/*$/, '')}/` : prefix;
      const entries: DropEntry[] = [];
      let token: string | undefined;
      do {
        // At most 1000 keys per page; the delimiter folds everything deeper into CommonPrefixes.
        const page = await send('ListObjectsV2', listPrefix, ({ sdk, client }) =>
          client.send(
            new sdk.ListObjectsV2Command({
              Bucket: bucket,
              Prefix: listPrefix,
              Delimiter: '/',
              ContinuationToken: token,
            }),
          ),
        );
        for (const object of page.Contents ?? []) {
          // Keys ending in `/` are folder placeholders made by consoles and sync tools, not files.
          if (object.Key && !object.Key.endsWith('/')) entries.push(toEntry(object));
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      // The same order as the local drop (S3 sorts by UTF-8 bytes, JS by UTF-16 units).
      return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },

    async stat(name) {
      return head(name, keyOf(name));
    },

    async read(name): Promise<Readable> {
      const key = keyOf(name);
      const object = await send('GetObject', key, ({ sdk, client }) =>
        client.send(new sdk.GetObjectCommand({ Bucket: bucket, Key: key })),
      );
      // In Node the body is the IncomingMessage itself: streamed, never buffered here.
      if (!(object.Body instanceof Readable))
        throw new S3DropError('GetObject', bucket, key, new Error('the body is not a Node stream'));
      return mapStreamErrors(object.Body, (error) => s3DropError('GetObject', bucket, key, error));
    },

    async rename(from, to) {
      const source = keyOf(from);
      const target = keyOf(to);
      // Not atomic: another writer could put `to` between the check and the copy, and two movers
      // could both copy before either deletes. That is acceptable because the runner's lease makes
      // one worker the only mover of a pipeline's files; the check still keeps a file settled
      // earlier (e.g. in processed/) from being overwritten. CopyObject handles up to 5 GiB.
      if (await head(to, target)) return false;
      const { sdk, client } = await connect();
      try {
        await client.send(
          new sdk.CopyObjectCommand({
            Bucket: bucket,
            Key: target,
            CopySource: `${bucket}/${encodeKey(source)}`,
          }),
        );
      } catch (error) {
        if (!isMissingKey(error))
          throw s3DropError('CopyObject', bucket, `${source} -> ${target}`, error);
        // Normally another mover took the source. But a server that decodes the copy source its own
        // way (s3rver: `+ : # ? & = @ , $ ;`) misses a key that is there: say so, not "lost the race".
        if (!(await head(from, source))) return false;
        const misread = new Error(
          'the copy source was not found although it exists: the server decodes x-amz-copy-source differently',
          { cause: error },
        );
        throw new S3DropError('CopyObject', bucket, `${source} -> ${target}`, misread);
      }
      await send('DeleteObject', source, () =>
        client.send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: source })),
      );
      return true;
    },

    async write(name, content) {
      const key = keyOf(name);
      const extension = /\.([a-z0-9]+)$/i.exec(name)?.[1]?.toLowerCase() ?? '';
      let local = typeof content === 'object' && 'file' in content ? content.file : undefined;
      const length = local
        ? (await stat(local)).size
        : Buffer.byteLength(content as string | Buffer);
      // Small files go as bytes, which the SDK can resend on its own retries; a large one streams
      // (bounded memory), and a failed upload fails the call, to be retried with the file.
      if (local && length <= BUFFERED_UPLOAD_BYTES) {
        content = await readFile(local);
        local = undefined;
      }
      // A PUT object appears whole or not at all, so unlike a file no temporary name is needed.
      await send('PutObject', key, ({ sdk, client }) =>
        client.send(
          new sdk.PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: local ? createReadStream(local) : (content as string | Buffer),
            // Explicit: the SDK sets no length for an empty body or a stream and then warns of a stream of unknown length.
            ContentLength: length,
            ContentType: CONTENT_TYPES[extension],
          }),
        ),
      );
    },

    async remove(name) {
      const key = keyOf(name);
      // Deleting a missing key succeeds in S3, so "already gone" needs no special case.
      await send('DeleteObject', key, ({ sdk, client }) =>
        client.send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: key })),
      );
    },

    async close() {
      // Nothing to close before the first request; one in flight is destroyed with its client.
      if (connecting) (await connecting).client.destroy();
    },
  };
}

/**
 * The store for a pipeline's `source: { type: s3 }` as configured: the options of the schema
 * (./schema.ts, each described once there) with their secrets read. The store's own options
 * differ from the schema only where config names a secret and the store needs its value.
 */
export function s3DropFromSource(
  source: z.output<typeof s3Source>,
  secret: ResolveSecret,
): DropStore {
  return createS3Drop({
    bucket: source.bucket,
    prefix: source.prefix,
    region: source.region,
    forcePathStyle: source.forcePathStyle,
    timeoutMs: source.timeoutMs,
    ...(source.endpoint ? { endpoint: source.endpoint } : {}),
    ...(source.accessKeyId && source.secretAccessKey
      ? {
          credentials: {
            accessKeyId: secret(source.accessKeyId, 'source.accessKeyId'),
            secretAccessKey: secret(source.secretAccessKey, 'source.secretAccessKey'),
          },
        }
      : {}),
  });
}
