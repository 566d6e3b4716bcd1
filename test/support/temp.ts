import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

/** A temporary folder removed after the test file; `write` puts a file in it and returns its path. */
export function tempFolder(prefix = 'warehouse-ingest-') {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return {
    dir,
    write(name: string, content: string): string {
      const file = path.join(dir, name);
      writeFileSync(file, content);
      return file;
    },
  };
}
