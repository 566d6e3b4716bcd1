import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

/** A temporary folder removed after the test file; `write` puts a file in it and returns its path. */
export function tempFolder(prefix = 'warehouse-ingest-') {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
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
