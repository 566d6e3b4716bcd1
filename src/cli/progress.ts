/**
 * Progress of a command over a known number of items. On a terminal, one line on stderr redrawn
 * in place with `\r` (`[#######-------]  7/14  orders-7.csv`); elsewhere (a pipe, a log file,
 * cron) nothing but the result lines, so a log holds one line per item and no control characters.
 * Hand-written: ten lines do what a progress library would, without its dependencies.
 */
export interface Progress {
  /** Prints a result line (stdout), keeping the bar below it. */
  line(text: string): void;
  /** Moves the bar on: `done` items of the total, `label` the one just finished. */
  update(done: number, label: string): void;
  /** Removes the bar. */
  end(): void;
}

export interface ProgressStreams {
  out: { write(text: string): unknown };
  err: { write(text: string): unknown; isTTY?: boolean; columns?: number };
}

const WIDTH = 24;

export function createProgress(total: number, { out, err }: ProgressStreams): Progress {
  const bar = err.isTTY === true && total > 0;
  let shown = '';
  const clear = () => {
    if (shown) err.write('\r\x1b[K');
  };
  const draw = (text: string) => {
    shown = text.slice(0, Math.max(10, (err.columns || 80) - 1));
    err.write(`\r\x1b[K${shown}`);
  };
  return {
    line(text) {
      clear();
      out.write(`${text}\n`);
      if (shown) err.write(shown);
    },
    update(done, label) {
      if (!bar) return;
      const filled = Math.round((done / total) * WIDTH);
      draw(
        `[${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${String(done).padStart(String(total).length)}/${total}  ${label}`,
      );
    },
    end() {
      clear();
      shown = '';
    },
  };
}
