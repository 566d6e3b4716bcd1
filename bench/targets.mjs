// The speed targets, each printed with the figure of this run next to it. A figure that was
// not measured (its part did not run) is left out; nothing here fails the run.

/** `label: 1.4× (target ≤ 1.5×) met` — `at` is the bound, `most`: true for ≤, false for ≥. */
export function targetLine(label, value, { at, most, unit = '×' }) {
  if (typeof value !== 'number') return null;
  const met = most ? value <= at : value >= at;
  const bound = unit === '×' ? at.toFixed(1) : at;
  return `  ${label}: ${value}${unit} (target ${most ? '≤' : '≥'} ${bound}${unit}) ${met ? 'met' : 'NOT MET'}`;
}

function print(title, lines) {
  const present = lines.filter(Boolean);
  if (!present.length) return;
  console.log(`\ntargets (${title}):`);
  for (const line of present) console.log(line);
}

/** The JSON part's targets (bench/run.mjs summary). */
export function printTargets({ ratio }) {
  print('ratios service/baseline in this run', [
    targetLine('100-record batches, records/s', ratio.recordsPerSecond, { at: 1.0, most: false }),
    targetLine('100-record batches, server CPU per record', ratio.serverCpu, {
      at: 1.1,
      most: true,
    }),
    targetLine('1-record server CPU per request', ratio.serverCpuPerRequest, {
      at: 1.5,
      most: true,
    }),
    targetLine(
      'sandbox vs baseline PUBLISH=0, 1-record requests/s',
      ratio.sandboxRequestsPerSecond,
      {
        at: 0.8,
        most: false,
      },
    ),
    targetLine('1-record paced (open loop), p99', ratio.pacedP99, { at: 1.2, most: true }),
  ]);
}

/** The file-drop targets (bench/csv.mjs): memory flat and bounded, speed near the bare loop. */
export function printDropTargets({ csvSmall, csvLarge, bareRatio, json }) {
  print('whole-process peak RSS; lines/s of the drop / the bare loop in this run', [
    csvSmall &&
      targetLine(`CSV drop ${csvSmall.lines} lines, peak RSS`, csvSmall.peakRssMiB, {
        at: 256,
        most: true,
        unit: ' MiB',
      }),
    csvLarge &&
      targetLine(`CSV drop ${csvLarge.lines} lines, peak RSS`, csvLarge.peakRssMiB, {
        at: 256,
        most: true,
        unit: ' MiB',
      }),
    targetLine('CSV drop lines/s vs the bare loop', bareRatio, { at: 0.8, most: false }),
    json &&
      targetLine(`v2-JSON drop ${json.records} records, peak RSS`, json.peakRssMiB, {
        at: 256,
        most: true,
        unit: ' MiB',
      }),
  ]);
}
