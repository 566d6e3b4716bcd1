import { statSync } from 'node:fs';

/** What the check needs of a file's stat and of this process, so the rule is testable alone. */
export interface SecretFileOwnership {
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
}

/** The groups this process is in: its own group and its supplementary ones (e.g. Kubernetes' `fsGroup`). */
function serviceGroups(): readonly number[] {
  const own = process.getgid?.();
  const more = process.getgroups?.() ?? [];
  return own === undefined ? more : [own, ...more];
}

const octal = (mode: number) => (mode & 0o777).toString(8).padStart(4, '0');

/**
 * The rule PostgreSQL applies to its server key, for the same reason: a secret must not be readable
 * by every account on the machine, but a mounted secret cannot always be owner-only. A Kubernetes
 * secret with `defaultMode: 0400` becomes `0440`, owned by root and group `fsGroup`, when the pod
 * sets `fsGroup` (without it, root-owned `0400`, which the service's user cannot read at all).
 *
 * - others: no read, no write (`o-rw`);
 * - its group: never write; read only when the file is owned by root or its group is one of this
 *   service's groups (so only root, the service or accounts sharing its group can read it).
 *
 * The reason, or undefined when the file is private enough.
 */
export function secretFileExposure(
  file: SecretFileOwnership,
  groups: readonly number[],
): string | undefined {
  if ((file.mode & 0o006) !== 0) return 'is readable or writable by others';
  if ((file.mode & 0o020) !== 0) return 'is writable by its group';
  if ((file.mode & 0o050) === 0) return undefined;
  if (file.uid === 0 || groups.includes(file.gid)) return undefined;
  return `is readable by group ${file.gid}, which is not one of this service's groups, and not owned by root`;
}

/**
 * A file holding secrets must not be readable by every account on the machine (see
 * secretFileExposure for the rule). The message names the file and the fix; undefined when private.
 */
export function exposedSecretFile(file: string): string | undefined {
  if (process.platform === 'win32') return undefined; // no POSIX modes; ACLs are the operator's
  const stat = statSync(file);
  const reason = secretFileExposure(stat, serviceGroups());
  if (reason === undefined) return undefined;
  return `${file} holds secrets but ${reason} (mode ${octal(stat.mode)}); run chmod 600 ${file} (or 0440, owned by root or by the service's group)`;
}
