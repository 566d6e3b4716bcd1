import path from 'node:path/posix';
import {
  call,
  FAILURE,
  mkdirs,
  NO_SUCH_FILE,
  PERMISSION_DENIED,
  statusOf,
  Unsupported,
} from './calls.js';
import type { Session } from './session.js';

/**
 * A rename that never replaces an existing target (the store's `rename`): a hard link
 * (`hardlink@openssh.com`) then unlink of the source, like the local drop: link(2) never replaces
 * an existing target, and of two workers racing for one file exactly one unlinks the source. Plain
 * SFTP rename is the fallback for servers without the extension: OpenSSH implements it the same
 * way, but the protocol lets other servers overwrite. False when the race was lost (the source is
 * gone or the target exists).
 */
export async function renameUnlessTaken(
  { client, sftp }: Session,
  source: string,
  target: string,
): Promise<boolean> {
  await mkdirs(sftp, path.dirname(target));
  for (let tries = 1; ; tries++) {
    try {
      await call<void>((cb) => sftp.ext_openssh_hardlink(source, target, cb));
      break;
    } catch (error) {
      // A link the server refuses (fs.protected_hardlinks: our SFTP user does not own the
      // partner's file) is a move by posix-rename instead; see renameUnlessTaken in local.ts.
      if (statusOf(error) === PERMISSION_DENIED) {
        if ((await client.exists(target)) !== false) return false;
        try {
          await call<void>((cb) => sftp.ext_openssh_rename(source, target, cb));
          return true;
        } catch (renameError) {
          return lostRace(renameError, client, target);
        }
      }
      if (statusOf(error) === FAILURE) {
        // SFTP v3 has no "already exists": OpenSSH answers FAILURE, so look, once, and decide on
        // that one look (a second could see a busy lock gone again, and call a lost race an error).
        if ((await client.exists(target)) !== false) return false;
        // Gone by the time we look, it was there a moment ago (a lock released meanwhile): link
        // again. Bounded, as FAILURE is also any other refusal; generous, as a busy lock changes
        // hands fast.
        if (tries < LINK_TRIES && (await client.exists(source)) !== false) continue;
        throw error;
      }
      if (!(error instanceof Unsupported)) return lostRace(error, client, target);
      try {
        await call<void>((cb) => sftp.rename(source, target, cb));
        return true;
      } catch (renameError) {
        return lostRace(renameError, client, target);
      }
    }
  }
  try {
    await call<void>((cb) => sftp.unlink(source, cb));
    return true;
  } catch (error) {
    await call<void>((cb) => sftp.unlink(target, cb)).catch(() => undefined);
    if (statusOf(error) === NO_SUCH_FILE) return false; // another worker took it meanwhile
    throw error;
  }
}

/**
 * A move to a name nobody else makes (the store's `rename` with `fresh`): posix-rename, one
 * request the server carries out whole, so a worker killed or cut off mid-move never leaves the
 * file under both names, as a link then an unlink can. Servers without the extension get
 * `renameUnlessTaken`.
 */
export async function renameFresh(
  session: Session,
  source: string,
  target: string,
): Promise<boolean> {
  await mkdirs(session.sftp, path.dirname(target));
  // posix-rename replaces a target: look first, as the local drop does (nothing of ours is there).
  if ((await session.client.exists(target)) !== false) return false;
  try {
    await call<void>((cb) => session.sftp.ext_openssh_rename(source, target, cb));
    return true;
  } catch (error) {
    if (error instanceof Unsupported) return renameUnlessTaken(session, source, target);
    if (statusOf(error) === NO_SUCH_FILE) return false; // another worker took it first
    throw error;
  }
}

/** Links tried while each one is refused for a target that is gone when we look (see rename). */
const LINK_TRIES = 50;

/**
 * Whether a refused link/rename lost a race — the source is gone or the target exists — rather
 * than failed. SFTP v3 has no "already exists" status: OpenSSH answers FAILURE, so look.
 */
async function lostRace(
  error: unknown,
  client: Session['client'],
  target: string,
): Promise<boolean> {
  if (statusOf(error) === NO_SUCH_FILE) return false;
  if (statusOf(error) === FAILURE && (await client.exists(target)) !== false) return false;
  throw error;
}
