import type { z } from 'zod';
import type { ConfigProblem } from '../operator-errors.js';
import { formatPath } from '../records/issues.js';

/**
 * A NUL byte in a configuration or pipeline value is always a mistake (a binary paste, a
 * UTF-16 file read as UTF-8), and most consumers fail on it far from the cause: `fs` refuses the
 * path, a listener the address. One problem per such value, naming the file and the field, and
 * the schema's own complaints about the same value are left out so the cause is not buried.
 */

const MESSAGE =
  'Holds a NUL byte (\\0), which no setting may contain: remove it (an editor, a binary paste or a UTF-16 file put it there)';

/** The path of every string under `value` that holds a NUL byte. */
function nulPaths(value: unknown, at: PropertyKey[] = []): PropertyKey[][] {
  if (typeof value === 'string') return value.includes('\u0000') ? [at] : [];
  if (Array.isArray(value)) return value.flatMap((item, index) => nulPaths(item, [...at, index]));
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).flatMap(([key, child]) => nulPaths(child, [...at, key]));
  return [];
}

export interface NulCheck {
  readonly problems: ConfigProblem[];
  /** The schema's issues that are not about a value already reported. */
  readonly others: (issues: readonly z.core.$ZodIssue[]) => z.core.$ZodIssue[];
}

export function checkNulBytes(
  value: unknown,
  fileOf: (path: readonly PropertyKey[]) => string,
): NulCheck {
  const paths = nulPaths(value);
  const under = (issuePath: readonly PropertyKey[]) =>
    paths.some(
      (path) =>
        path.length <= issuePath.length && path.every((key, index) => key === issuePath[index]),
    );
  return {
    problems: paths.map((path) => ({
      file: fileOf(path),
      field: formatPath(path),
      message: MESSAGE,
    })),
    others: (issues) => issues.filter((issue) => !under(issue.path)),
  };
}
