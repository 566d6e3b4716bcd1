import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The "Rules the layout keeps" of docs/architecture.md, checked on the import graph of src/
 * (type-only imports included: a type is a dependency of understanding).
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const SRC = path.join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [full] : [];
  });
}

const files = sourceFiles(SRC).map((file) => path.relative(ROOT, file));
const texts = new Map(files.map((file) => [file, readFileSync(path.join(ROOT, file), 'utf8')]));
const IMPORT = /(?:import|export)[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g;

/** file → the files of src/ it imports */
const graph = new Map(
  files.map((file) => {
    const targets = new Set<string>();
    for (const [, spec] of texts.get(file)!.matchAll(IMPORT)) {
      const target = path.normalize(path.join(path.dirname(file), spec!)).replace(/\.js$/, '.ts');
      if (texts.has(target)) targets.add(target);
    }
    return [file, targets];
  }),
);

/** A top-level part of src/: its folder, or the file itself when it lies directly in src/. */
const part = (file: string) => {
  const [first, second] = path.relative('src', file).split(path.sep);
  return second === undefined ? first! : `${first}/`;
};

/** Groups of nodes that reach each other (Tarjan), larger than one. */
function knots(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const to of edges.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) === index.get(node)) {
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        group.push(member);
      } while (member !== node);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return found;
}

const importers = (predicate: (target: string) => boolean) =>
  files.filter((file) => [...graph.get(file)!].some(predicate));

describe('the layout rules of docs/architecture.md', () => {
  it('has no import cycle between files', () => {
    expect(knots(graph)).toEqual([]);
  });

  it('has no cycle between the top-level parts of src/', () => {
    const parts = new Map<string, Set<string>>();
    for (const [file, targets] of graph) {
      const from = part(file);
      const set = parts.get(from) ?? new Set<string>();
      for (const target of targets) if (part(target) !== from) set.add(part(target));
      parts.set(from, set);
    }
    expect(knots(parts)).toEqual([]);
  });

  it('imports main.ts from nowhere: the composition root only composes', () => {
    // Static imports: cli.ts loads it with import() to run `serve`, and nothing else does.
    expect(importers((target) => target === 'src/main.ts')).toEqual([]);
    expect(
      files.filter((file) => /import\(\s*'[./]*main\.js'\s*\)/.test(texts.get(file)!)),
    ).toEqual(['src/cli.ts']);
  });

  it('keeps adapters apart from their engines', () => {
    const engineParts = (target: string) =>
      target.startsWith('src/drops/') || target.startsWith('src/events/');
    expect(importers(engineParts).filter((file) => file.startsWith('src/stores/'))).toEqual([]);
    const engine = new Set(['src/events/consumer.ts', 'src/events/handle.ts']);
    expect(
      importers((target) => engine.has(target)).filter((file) =>
        file.startsWith('src/events/destinations/'),
      ),
    ).toEqual([]);
    expect(
      importers((target) => target.startsWith('src/ingest/')).filter((f) =>
        f.startsWith('src/decode/'),
      ),
    ).toEqual([]);
  });

  it('keeps the words in one module that imports nothing, and defines no outcome list elsewhere', () => {
    expect([...graph.get('src/vocabulary.ts')!]).toEqual([]);
    const lists = /export const (?:\w+_)?(?:OUTCOMES|STATUSES|REASONS) = \[/;
    // REPROCESS_STATUSES selects among INPUT_STATUSES; it names no word of its own.
    expect(
      files.filter((file) => file !== 'src/vocabulary.ts' && lists.test(texts.get(file)!)),
    ).toEqual(['src/drops/state/input-state.ts']);
  });

  it('opens RabbitMQ connections in one file', () => {
    const connecting = files.filter((file) =>
      /import\s*\{[^}]*\bconnect\b[^}]*\}\s*from\s*'amqplib'/.test(texts.get(file)!),
    );
    expect(connecting).toEqual(['src/broker/connection.ts']);
  });
});
