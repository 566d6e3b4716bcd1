// Preloaded (node --import) into a child whose memory the CSV bench measures: on exit, writes the
// process's peak resident set (VmHWM), current RSS and CPU time to $BENCH_PEAK_FILE. Read from
// /proc/self/status at the last moment the process still has its memory, so no peak is missed
// (a poll from outside can miss one in its last interval).
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.env.BENCH_PEAK_FILE;
if (file) {
  process.on('exit', () => {
    try {
      const status = readFileSync('/proc/self/status', 'utf8');
      const kib = (name) =>
        Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
      const cpu = process.cpuUsage();
      const memory = process.memoryUsage();
      writeFileSync(
        file,
        JSON.stringify({
          vmHWMKiB: kib('VmHWM'),
          vmRSSKiB: kib('VmRSS'),
          heapUsedKiB: Math.round(memory.heapUsed / 1024),
          externalKiB: Math.round(memory.external / 1024),
          cpuUserMs: Math.round(cpu.user / 1000),
          cpuSystemMs: Math.round(cpu.system / 1000),
          uptimeMs: Math.round(process.uptime() * 1000),
        }),
      );
    } catch {
      // best effort: the parent falls back to its own polling
    }
  });
}
