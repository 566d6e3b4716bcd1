import { afterEach } from 'vitest';

interface Closable {
  close(): Promise<unknown> | unknown;
}

/**
 * What a test opens (receivers, harnesses, proxies), closed after each test in reverse order of
 * opening: the harness before the receiver it delivers to, the proxy last.
 */
export function closedAfterEach(): { push(...things: Closable[]): void } {
  let open: Closable[] = [];
  afterEach(async () => {
    const things = open.reverse();
    open = [];
    for (const thing of things) await thing.close();
  });
  return { push: (...things) => void open.push(...things) };
}
