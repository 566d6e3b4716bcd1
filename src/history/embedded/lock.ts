/**
 * The embedded history's lock file (`<folder>.lock`, the holder's pid): PGlite is not a server,
 * so one process at a time may hold its folder. A second instance on the same folder fails at
 * once instead of two WASM databases writing the same files; a lock left by a dead process is
 * taken over. The lock is the process's, not its worker thread's: a restarted worker keeps it.
 */
import { open as openFile, readFile, unlink } from 'node:fs/promises';
import { HistoryUnavailable } from '../../operator-errors.js';

/** Takes `file` for this process, or refuses when a live process (this one included) holds it. */
export async function takeLock(file: string): Promise<void> {
  for (let tries = 0; tries < 2; tries++) {
    try {
      const handle = await openFile(file, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = await lockHolder(file);
    if (holder !== undefined) {
      throw new HistoryUnavailable(
        `the embedded history ${file.slice(0, -'.lock'.length)} is held by process ${holder}: one process at a time may open it (several instances share a PostgreSQL history instead, history.url)`,
      );
    }
    await unlink(file).catch(() => undefined); // a dead holder's
  }
  throw new HistoryUnavailable(`could not take the lock ${file}`);
}

export const releaseLock = (file: string) => unlink(file).catch(() => undefined);

/** The live process holding `file`, if any. */
export async function lockHolder(file: string): Promise<number | undefined> {
  const holder = Number((await readFile(file, 'utf8').catch(() => '')).trim());
  return Number.isInteger(holder) && holder > 0 && alive(holder) ? holder : undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
