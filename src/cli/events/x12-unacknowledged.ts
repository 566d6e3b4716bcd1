import { parseArgs } from 'node:util';
import { loadConfig } from '../../config.js';
import { openDrops } from '../../drops/open.js';
import { scanAcknowledgments } from '../../events/destinations/file/x12-acknowledgments.js';
import { type Output, parse } from '../check-commands.js';

/**
 * `events x12-unacknowledged [--pipeline <name>] [--json]`: per pipeline with an X12 outbound
 * folder, reads the partner's 997s, matches them to what was sent, and lists the interchanges
 * still without one after `acknowledgeWithinMs`. Exit 1 when any is unacknowledged or refused.
 */
export async function x12Unacknowledged(args: string[], io: Output): Promise<number> {
  const { values } = parse('events', () =>
    parseArgs({
      args,
      options: { pipeline: { type: 'string' }, json: { type: 'boolean' } },
      strict: true,
    }),
  );
  const drops = openDrops(loadConfig()).filter(
    ({ pipeline }) =>
      pipeline.events?.format === 'x12' &&
      (values.pipeline === undefined || pipeline.name === values.pipeline),
  );
  let owed = 0;
  const report = [];
  try {
    for (const { pipeline, store } of drops) {
      const spec = pipeline.events?.x12;
      if (!spec) continue;
      const scan = await scanAcknowledgments(store, spec);
      owed += scan.unacknowledged.length + scan.refused.length;
      report.push({ pipeline: pipeline.name, ...scan });
    }
  } finally {
    await Promise.all(drops.map(({ store }) => store.close().catch(() => undefined)));
  }
  if (values.json) io.out(`${JSON.stringify(report)}\n`);
  else
    for (const r of report) {
      io.out(
        `${r.pipeline}: ${r.matched} 997(s) matched now, ${r.unacknowledged.length} unacknowledged, ${r.refused.length} refused\n`,
      );
      for (const s of r.unacknowledged)
        io.out(`  ${s.control} ${s.set} sent ${s.sentAt}: ${s.file} — no 997\n`);
      for (const s of r.refused)
        io.out(`  ${s.control} ${s.set} sent ${s.sentAt}: ${s.file} — 997 AK9 ${s.code}\n`);
      for (const name of r.unmatched) io.out(`  ${name}: acknowledges nothing sent\n`);
    }
  return owed > 0 ? 1 : 0;
}
