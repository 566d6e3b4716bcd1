import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

const made = new Set<string>();

// Registered as this module is imported, while a test file is collected: an `afterAll` called
// later — from a `beforeAll` or a test, where most folders are made — is never run, and each run
// left its folders behind (a thousand and more, some holding an embedded history's 39 MB).
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  made.clear();
});

/** A temporary folder removed after the test file; `write` puts a file in it and returns its path. */
export function tempFolder(prefix = 'warehouse-ingest-') {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  made.add(dir);
  return {
    dir,
    /** Owner-only (0600), as config files holding secrets must be. */
    write(name: string, content: string, mode = 0o600): string {
      const file = path.join(dir, name);
      writeFileSync(file, content, { mode });
      chmodSync(file, mode); // umask may have narrowed, and an existing file keeps its mode
      return file;
    },
  };
}
