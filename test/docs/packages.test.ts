import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * docs/decisions.md#packages says of each package whether the service uses it: for every runtime
 * dependency of package.json the table names, its "Used?" must match what src/ imports (a review
 * found chokidar marked "no" while src/stores/local/ watched local drops with it).
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

function sources(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(folder, entry.name);
    if (entry.isDirectory()) return sources(relative);
    return entry.name.endsWith('.ts') ? [read(relative)] : [];
  });
}

describe('docs/decisions.md: the Packages table', () => {
  const dependencies = Object.keys(
    (JSON.parse(read('package.json')) as { dependencies: Record<string, string> }).dependencies,
  );
  const code = sources('src').join('\n');
  const imported = (name: string) =>
    new RegExp(`(?:from |import\\(|resolve\\()'${name.replace(/[/.]/g, '\\$&')}(?:/[^']*)?'`).test(
      code,
    );
  const section = read('docs/decisions.md').split('## Packages')[1]!;
  const rows = [...section.matchAll(/^\| ([^|]+) \| (yes|no)\b[^|]* \|/gm)].flatMap(
    ([, names, used]) =>
      names!.split(', ').map((entry) => ({ name: entry.split(' ')[0]!, used: used === 'yes' })),
  );

  it('names runtime dependencies', () => {
    expect(rows.filter(({ name }) => dependencies.includes(name)).length).toBeGreaterThan(5);
  });

  it.each(rows.filter(({ name }) => dependencies.includes(name)))(
    '$name: "Used?" matches what src/ imports',
    ({ name, used }) => {
      expect(imported(name)).toBe(used);
    },
  );
});
