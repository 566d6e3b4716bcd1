/**
 * Whether the embedded history's native addon (better-sqlite3's `better_sqlite3.node`) loads on
 * this Node line. A release built on one Node line and run on another (`NODE_MODULE_VERSION 115`
 * against 137: Node 20 and 24) loads everything else, and the history then fails on its first
 * write, every row kept while nothing is written (issue 38, item 5). `serve` and `run` ask this
 * before anything starts and refuse to start with one line saying what to do.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

/**
 * `undefined` when the addon loads; else why not and what to do, in one line. `check` throws
 * when it does not load (tests pass one that does).
 */
export function embeddedAddonProblem(check: () => void = loadsInAChild): string | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    // Node's message spans lines (which NODE_MODULE_VERSION the file has): kept, on one line.
    const reason = (error as Error).message.replace(/\s+/g, ' ').trim().slice(0, 400);
    return (
      `The embedded history's SQLite addon (better-sqlite3) does not load on Node ${process.version} ` +
      `(NODE_MODULE_VERSION ${process.versions.modules}): ${reason} ` +
      `Rebuild it on this Node line (npm rebuild better-sqlite3, in the release folder), run the release on the Node line it was built for, ` +
      'or keep the history in PostgreSQL (history.url, HISTORY_URL).'
    );
  }
}

/**
 * Opens a database in a child process on this Node binary (better-sqlite3 loads its addon with
 * the first database, not with the module), never in this process: on Node 24 a process that
 * loaded the addon on its main thread and in the history's worker thread crashed as it exited
 * (docs/decisions.md#the-sqlite-addon-stays-off-serves-main-thread). About 50–100 ms, once, at start-up.
 */
function loadsInAChild(): void {
  const entry = createRequire(import.meta.url).resolve('better-sqlite3');
  const result = spawnSync(
    process.execPath,
    ['-e', "new (require(process.argv[1]))(':memory:').close()", entry],
    { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  if (result.status === 0) return;
  // Node's own message without its stack and source excerpt.
  const message = (result.stderr ?? '')
    .split('\n')
    .filter((line) => line.trim() && !/^\s+at |^node:|^\s*\^|^Node\.js v/.test(line))
    .join(' ');
  throw new Error(message || result.error?.message || `the check exited with ${result.status}`);
}
