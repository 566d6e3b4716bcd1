import { readFileSync } from 'node:fs';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { exposedSecretFile } from '../secret-files.js';
import type { z } from 'zod';
import { createLocalDrop } from './local/index.js';
import type { localSource } from './local/schema.js';
import { createS3Drop } from './s3/index.js';
import type { s3Source } from './s3/schema.js';
import type { SecretRef } from './secret-ref.js';
import { createSftpDrop } from './sftp/index.js';
import type { sftpSource } from './sftp/schema.js';
import type { DropStore } from './store.js';

/**
 * The source table: one entry per kind of drop. Adding a source is one module (implementing
 * `DropStore`), one line here, and one fixture for the contract suites.
 */
/** A pipeline's `source`, parsed: each adapter's own schema (`<store>/schema.ts`). */
export type StoreSource =
  | z.output<typeof localSource>
  | z.output<typeof sftpSource>
  | z.output<typeof s3Source>;
type Source = StoreSource;
type Secret = (ref: SecretRef, field: string, isSecret?: boolean) => string;
type Factory<T extends Source['type']> = (
  source: Extract<Source, { type: T }>,
  secret: Secret,
) => DropStore;

const SOURCES: { [T in Source['type']]: Factory<T> } = {
  local: (source) =>
    createLocalDrop({
      path: source.path,
      watch: source.watch.enabled,
      usePolling: source.watch.usePolling,
      pollingIntervalMs: source.watch.pollingIntervalMs,
    }),
  sftp: (source, secret) =>
    createSftpDrop({
      host: source.host,
      port: source.port,
      username: source.username,
      path: source.path,
      timeoutMs: source.timeoutMs,
      ...(source.password ? { password: secret(source.password, 'source.password') } : {}),
      ...(source.privateKey ? { privateKey: secret(source.privateKey, 'source.privateKey') } : {}),
      ...(source.passphrase ? { passphrase: secret(source.passphrase, 'source.passphrase') } : {}),
      ...(source.hostKeyFingerprints
        ? { hostKeyFingerprints: [...source.hostKeyFingerprints] }
        : {}),
      ...(source.knownHosts
        ? { knownHosts: secret({ file: source.knownHosts }, 'source.knownHosts', false) }
        : {}),
    }),
  s3: (source, secret) =>
    createS3Drop({
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
    }),
};

/**
 * The store for a pipeline's source. Every secret that cannot be read is a start-up error naming
 * the file and field, all of them at once (an operator fixing one per run would need as many runs).
 */
export function createDropStore(
  pipeline: { readonly source: StoreSource },
  file: string,
  env: NodeJS.ProcessEnv = process.env,
): DropStore {
  const problems: ConfigProblem[] = [];
  const secret: Secret = (ref, field, isSecret = true) => {
    const problem = (message: string) => {
      problems.push({ file, field, message });
      return '';
    };
    if ('env' in ref) {
      const value = env[ref.env];
      if (value === undefined || value === '')
        return problem(`Environment variable ${ref.env} is not set`);
      return value;
    }
    try {
      const exposed = isSecret ? exposedSecretFile(ref.file) : undefined; // known_hosts is public
      if (exposed) return problem(exposed);
      return readFileSync(ref.file, 'utf8');
    } catch (error) {
      return problem(
        `Cannot read ${ref.file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
  };
  const factory = SOURCES[pipeline.source.type] as Factory<Source['type']>;
  const store = factory(pipeline.source, secret);
  if (problems.length > 0) {
    void store.close().catch(() => undefined);
    throw new ConfigError(problems);
  }
  return store;
}
