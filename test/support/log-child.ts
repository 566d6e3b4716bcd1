// A process that logs through `createLogger` to its real stdout, for test/ops/log-destination.test.ts.
// argv[2] is the case: `one` (one line, then stays up), `burst` (many lines, then exits at once),
// `stalled` (more than the pending bound while nobody reads stdout; reports on stderr, then waits for stdin to end).
import { createLogger } from '../../src/log.js';

const mode = process.argv[2];
let dropped = 0;
const log = createLogger({ level: 'info', onDrop: () => void dropped++ });

if (mode === 'one') {
  log.info({ n: 1 }, 'one line');
  process.stderr.write('logged\n');
  setInterval(() => undefined, 1000); // stays up: the line must not wait for the exit
} else if (mode === 'burst') {
  const lines = Number(process.argv[3]);
  for (let n = 0; n < lines; n++) log.info({ n }, 'burst line');
  process.exit(0);
} else if (mode === 'stalled') {
  const lines = Number(process.argv[3]);
  const padding = 'x'.repeat(1000);
  let worstLagMs = 0;
  let n = 0;
  const step = () => {
    const began = performance.now();
    for (let i = 0; i < 1000 && n < lines; i++, n++) log.info({ n, padding }, 'stalled line');
    setImmediate(() => {
      worstLagMs = Math.max(worstLagMs, performance.now() - began);
      if (n < lines) step();
      else {
        process.stderr.write(
          `${JSON.stringify({ dropped, worstLagMs, rssMiB: process.memoryUsage().rss / 2 ** 20 })}\n`,
        );
        process.stdin.resume().on('end', () => process.exit(0));
      }
    });
  };
  step();
}
