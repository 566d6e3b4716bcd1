import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

/**
 * What the portal's browser tests share: Debian's chromium, a port for the service, a fresh
 * browser signing in with a link, and `capture` — every page a test looks at is checked by
 * axe-core (the rules engine accessibility audits use) and photographed.
 */
const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const ROOT = new URL('../..', import.meta.url).pathname;
const SHOTS = path.join(ROOT, 'test-output', 'portal');
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown; failureSummary?: string }>;
}

/**
 * axe-core's violations of impact serious or critical on the page as it is (printed when there
 * are any). Injected by playwright into a context that bypasses the page's CSP (`newContext`).
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } })
      .axe;
    return (await axe.run()).violations as AxeViolation[];
  });
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of serious)
    console.error(
      `axe: ${v.id} (${v.impact}) on ${page.url()}: ${v.help}\n${v.nodes
        .map((node) => `  ${JSON.stringify(node.target)} ${node.failureSummary ?? ''}`)
        .join('\n')}`,
    );
  return serious;
}

/**
 * Checks the page with axe-core (no serious or critical violation), then photographs it to
 * test-output/portal/<name>.png, and with PORTAL_SCREENSHOTS=docs to docs/img/portal-<name>.png.
 */
export async function capture(page: Page, name: string): Promise<void> {
  expect(await seriousViolations(page), `accessibility of ${name}`).toEqual([]);
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  if (process.env.PORTAL_SCREENSHOTS === 'docs')
    await page.screenshot({
      path: path.join(ROOT, 'docs', 'img', `portal-${name}.png`),
      fullPage: true,
    });
}

/**
 * A fresh browser context (no cookies). `bypassCSP`: the portal's CSP lets no script run, and
 * axe-core is a script injected by the test; the header itself is read as sent
 * (portal-events.test.ts).
 */
export function newContext(browser: Browser): Promise<BrowserContext> {
  return browser.newContext({ viewport: { width: 1200, height: 800 }, bypassCSP: true });
}

/** A fresh browser (no cookies) opening `link` and pressing Continue. */
export async function signIn(
  browser: Browser,
  link: string,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await newContext(browser);
  const page = await context.newPage();
  const opened = await page.goto(link);
  expect(opened?.status()).toBe(200);
  await page.getByRole('button', { name: 'Continue' }).click();
  return { context, page };
}

/** What `read` finds on the page once it is loaded again (the history's writer flushes apart). */
export async function reloaded<T>(page: Page, read: () => Promise<T>): Promise<T> {
  await page.reload();
  return read();
}
