/**
 * A write the store refused because of a row in it (PostgreSQL's data and integrity classes 22
 * and 23, SQLite's constraint and type codes), as opposed to the store being away
 * (`HistoryUnavailable`) or unable to write at all (a role without rights, an addon built for
 * another Node line: any other error). Only this one is narrowed down row by row by the writer,
 * so that one bad row never takes its neighbours with it; an error about the store itself would
 * refuse every row, and its rows are kept instead.
 */
export class HistoryRowRefused extends Error {
  override readonly name = 'HistoryRowRefused';
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
  }
}
