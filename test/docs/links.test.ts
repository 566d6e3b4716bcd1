import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { slug } from '../../scripts/docs/reference.js';

/**
 * The repository must stand alone: a clone without its sibling folders holds every document the
 * README and the code refer to. These checks read files only.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

function filesUnder(folder: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, folder), { withFileTypes: true })) {
    const relative = path.join(folder, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(relative));
    else out.push(relative);
  }
  return out.sort();
}

const PAGES = ['README.md', ...filesUnder('docs').filter((file) => file.endsWith('.md'))];

/** Markdown without its fenced code blocks, where `[x](y)` is not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '');
}

/** The anchors a page's headings get (GitHub's scheme, `-1`, `-2` … for repeats). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(heading!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

function links(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
}

describe('documentation links', () => {
  it.each(PAGES)('%s: every relative link resolves to a file (and heading) in the repo', (page) => {
    const broken: string[] = [];
    for (const link of links(read(page))) {
      if (/^[a-z]+:/i.test(link)) continue; // https:, mailto: — not a file of the repo
      const [target = '', anchor] = link.split('#');
      const file = target === '' ? page : path.normalize(path.join(path.dirname(page), target));
      if (file.startsWith('..') || !existsSync(path.join(ROOT, file))) {
        broken.push(`${link} (no file ${file})`);
        continue;
      }
      if (anchor && file.endsWith('.md') && !anchors(read(file)).has(anchor))
        broken.push(`${link} (no heading #${anchor} in ${file})`);
    }
    expect(broken).toEqual([]);
  });

  it('keeps the README a front door: at most 10 KB', () => {
    expect(statSync(path.join(ROOT, 'README.md')).size).toBeLessThanOrEqual(10 * 1024);
  });
});

describe('nothing points outside the repository', () => {
  const files = [
    'README.md',
    ...['src', 'docs', 'config', 'pipelines', 'scripts'].flatMap((folder) => filesUnder(folder)),
  ];

  it.each(files)('%s', (file) => {
    const text = read(file);
    const outside = [...text.matchAll(/\.\.\/shared\b|\/work\/shared\b/g)].map((match) => match[0]);
    // `../x` may still climb out of the repository from a shallow folder.
    const climbing = [...text.matchAll(/(?<![\w.])\.\.\/[\w./-]+/g)]
      .map((match) => match[0])
      .filter((ref) => path.normalize(path.join(path.dirname(file), ref)).startsWith('..'));
    expect([...outside, ...climbing]).toEqual([]);
  });
});

describe('docs that must follow the code', () => {
  it('every docs/<page>.md#<heading> the code and config name exists', () => {
    const broken: string[] = [];
    for (const file of ['src', 'config', 'pipelines', 'scripts'].flatMap(filesUnder)) {
      for (const [mention, page, anchor] of read(file).matchAll(
        /(?<![\w/.-])docs\/([a-z0-9-]+\.md)(?:#([a-z0-9-]+))?/g,
      )) {
        const target = path.join('docs', page!);
        if (!existsSync(path.join(ROOT, target))) broken.push(`${file}: ${mention}`);
        else if (anchor && !anchors(read(target)).has(anchor)) broken.push(`${file}: ${mention}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('docs/architecture.md maps every file of src/, and only those', () => {
    const mapped = [...read('docs/architecture.md').matchAll(/^\| `(src\/[^`]+)` \|/gm)].map(
      (match) => match[1]!,
    );
    expect([...mapped].sort()).toEqual(filesUnder('src').filter((file) => file.endsWith('.ts')));
  });

  it('docs/api.md lists every problem type of src/errors.ts', () => {
    const codes = [...read('src/errors.ts').matchAll(/readonly code = '([a-z-]+)'/g)].map(
      (match) => match[1]!,
    );
    const api = read('docs/api.md');
    expect(codes.filter((code) => !api.includes(`\`/problems/${code}\``))).toEqual([]);
  });
});
