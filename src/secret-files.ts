import { statSync } from 'node:fs';

/**
 * A file holding secrets must be readable by its owner only: a world-readable key file leaks to
 * every account on the machine. The message names the file and the fix; undefined when private.
 */
export function exposedSecretFile(file: string): string | undefined {
  if (process.platform === 'win32') return undefined; // no POSIX modes; ACLs are the operator's
  const mode = statSync(file).mode;
  if ((mode & 0o077) === 0) return undefined;
  return `${file} holds secrets but is accessible by group or others (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); run chmod 600 ${file}`;
}
