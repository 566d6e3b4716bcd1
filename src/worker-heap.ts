/**
 * Worker threads get their own young generation, not the main thread's. `npm start` runs node
 * with `--max-semi-space-size=32` (a larger nursery for the HTTP path: fewer scavenges per
 * request), but V8 flags are process-wide and the flag wins over a worker's
 * `resourceLimits.maxYoungGenerationSizeMb`: every worker isolate (the drop's two validating
 * halves, the embedded history's writer) then grew a 2 × 32 MiB nursery of its own. Measured on a
 * 400k-line CSV drop under `serve`: peak RSS 354 MiB with the flag, 205 without
 * (docs/performance.md#memory-of-a-drop-under-serve). The main isolate's heap was sized when it
 * started; setting the flag back to V8's default (0: derive it from the isolate's own limits)
 * before a worker starts only changes the isolates created afterwards.
 */
import { setFlagsFromString } from 'node:v8';

let done = false;

/** Called before starting a worker thread; idempotent. */
export function workersOwnYoungGeneration(): void {
  if (done) return;
  done = true;
  if (process.execArgv.some((arg) => arg.startsWith('--max-semi-space-size'))) {
    setFlagsFromString('--max-semi-space-size=0');
  }
}
