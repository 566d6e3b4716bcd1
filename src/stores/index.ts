import { readFileSync } from 'node:fs';
import { ConfigError, type ConfigProblem } from '../operator-errors.js';
import { exposedSecretFile } from '../secret-files.js';
import type { z } from 'zod';
import { localDropFromSource } from './local/index.js';
import type { localSource } from './local/schema.js';
import { s3DropFromSource } from './s3/index.js';
import type { s3Source } from './s3/schema.js';
import type { ResolveSecret } from './secret-ref.js';
import { sftpDropFromSource } from './sftp/index.js';
import type { sftpSource } from './sftp/schema.js';
import type { DropStore } from './store.js';

/** A pipeline's `source`, parsed: each adapter's own schema (`<store>/schema.ts`). */
export type StoreSource =
  | z.output<typeof localSource>
  | z.output<typeof sftpSource>
  | z.output<typeof s3Source>;
type Factory<T extends StoreSource['type']> = (
  source: Extract<StoreSource, { type: T }>,
  secret: ResolveSecret,
) => DropStore;

/**
 * The source table: one entry per kind of drop. Adding a source is one folder (its schema, and a
 * module implementing `DropStore` with its `…FromSource`), one line here, and one fixture for the
 * contract suites.
 */
const SOURCES: { [T in StoreSource['type']]: Factory<T> } = {
  local: localDropFromSource,
  sftp: sftpDropFromSource,
  s3: s3DropFromSource,
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
  const secret: ResolveSecret = (ref, field, isSecret = true) => {
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
  const factory = SOURCES[pipeline.source.type] as Factory<StoreSource['type']>;
  const store = factory(pipeline.source, secret);
  if (problems.length > 0) {
    void store.close().catch(() => undefined);
    throw new ConfigError(problems);
  }
  return store;
}
