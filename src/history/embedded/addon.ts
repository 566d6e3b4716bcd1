/**
 * Whether the embedded history's native addon (better-sqlite3's `better_sqlite3.node`) loads on
 * this Node line. A release built on one Node line and run on another (`NODE_MODULE_VERSION 115`
 * against 137: Node 20 and 24) loads everything else, and the history then fails on its first
 * write, every row kept while nothing is written (issue 38, item 5). `serve` and `run` ask this
 * before anything starts and refuse to start with one line saying what to do.
 */
import { createRequire } from 'node:module';

type SqliteModule = new (file: string) => { close(): void };

/** `undefined` when the addon loads; else why not and what to do, in one line. */
export function embeddedAddonProblem(
  load: () => SqliteModule = () => createRequire(import.meta.url)('better-sqlite3') as SqliteModule,
): string | undefined {
  try {
    // better-sqlite3 loads its addon with the first database, not with the module.
    new (load())(':memory:').close();
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
