import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { ConfigError, type ConfigProblem } from '../operator-errors.js';
import { exposedSecretFile } from '../secret-files.js';

/** Where the partner-facing listener's certificate and key are (`http.tls`). */
export interface TlsFiles {
  readonly cert: string;
  readonly key: string;
}

/**
 * The certificate and key, read and checked as `serve` serves them (at start-up and at every
 * reload) and as `lint` checks them: one check, so `lint` never passes a pair `serve` refuses. A
 * key that others may read, a file that cannot be read, or a key that is not the certificate's
 * throws `ConfigError` naming the file and the field.
 */
export function readTlsPair(files: TlsFiles): { cert: Buffer; key: Buffer } {
  const read = (field: 'cert' | 'key') => {
    const file = files[field];
    const exposed = field === 'key' ? exposedSecretFile(file) : undefined;
    if (exposed) throw new ConfigError([{ file, field: 'http.tls.key', message: exposed }]);
    try {
      return readFileSync(file);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new ConfigError([
        {
          file,
          field: `http.tls.${field}`,
          message:
            code === 'ENOENT' ? 'file not found' : `cannot read it (${code ?? 'unreadable'})`,
        },
      ]);
    }
  };
  const pair = { cert: read('cert'), key: read('key') };
  try {
    createSecureContext(pair);
  } catch (error) {
    throw new ConfigError([
      {
        file: files.cert,
        field: 'http.tls',
        message: `certificate and key do not form a pair (${(error as Error).message})`,
      },
    ]);
  }
  return pair;
}

/** `readTlsPair`'s refusal as problems (none without TLS), for the checks `serve` and `lint` share. */
export function tlsProblems(files: TlsFiles | undefined): ConfigProblem[] {
  if (!files) return [];
  try {
    readTlsPair(files);
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return [...error.problems];
  }
}
