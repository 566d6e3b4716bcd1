/**
 * A partner's mapping: a JSONata expression, compiled once (at start-up), evaluated once per row,
 * input object or group. JSONata reads only the input it is given and the functions bound to it:
 * it has no way to the environment, files or network, and looks up only an object's own
 * properties (so no `constructor` or `__proto__` either). jsonata 2.2's own guardrails bound
 * each evaluation in time (`timeout`) and depth (`stack`), checked on every step, so a runaway
 * expression fails its file instead of holding the worker.
 */
import jsonata from 'jsonata';

export interface MappingLimits {
  /** The longest one evaluation may run, in ms. */
  readonly timeoutMs: number;
  /** The deepest one evaluation may nest. */
  readonly maxDepth: number;
}

/** A mapping that does not compile: where in the expression, and why. */
export class MappingSyntaxError extends Error {
  override readonly name = 'MappingSyntaxError';
  constructor(
    readonly position: number | undefined,
    readonly reason: string,
  ) {
    super(position === undefined ? reason : `at position ${position}: ${reason}`);
  }
}

/** Why one evaluation failed: its own error (`failed`), or it ran out of time or depth (`runaway`). */
export class MappingFailed extends Error {
  override readonly name = 'MappingFailed';
  constructor(
    readonly runaway: boolean,
    readonly reason: string,
  ) {
    super(reason);
  }
}

export interface CompiledMapping {
  /** What it was compiled from: another thread compiles it again from this (`file.ts`'s halves). */
  readonly source: { readonly expression: string; readonly limits: MappingLimits };
  /** The mapping's output for one input; throws `MappingFailed`. */
  evaluate(input: unknown): Promise<unknown>;
  /**
   * The input fields (CSV columns) the value at a record path is made from, as far as the
   * expression shows it (`{"quantities": {"ordered": $number(Qty)}}` → `Qty` for
   * `quantities.ordered`); array indexes are left out of `path`.
   */
  fieldsOf(path: string): readonly string[];
}

/** Functions a mapping has no use for: `$eval` runs text as an expression, out of sight of the checks here. */
const WITHHELD = ['eval'] as const;

/** Compiles `expression`; throws `MappingSyntaxError`. */
export function compileMapping(expression: string, limits: MappingLimits): CompiledMapping {
  let compiled: jsonata.Expression;
  try {
    compiled = jsonata(expression, { timeout: limits.timeoutMs, stack: limits.maxDepth });
  } catch (error) {
    const { position, message } = error as Partial<jsonata.JsonataError>;
    throw new MappingSyntaxError(position, message ?? String(error));
  }
  for (const name of WITHHELD)
    compiled.registerFunction(name, () => {
      throw { code: 'MAP01', message: `$${name} is not available in mappings` };
    });
  const fields = fieldTable(compiled.ast());
  return {
    source: { expression, limits: { timeoutMs: limits.timeoutMs, maxDepth: limits.maxDepth } },
    async evaluate(input) {
      try {
        return await compiled.evaluate(input);
      } catch (error) {
        throw failure(error);
      }
    },
    fieldsOf: (path) => fields.get(path) ?? [],
  };
}

function failure(error: unknown): MappingFailed {
  const { code, message, position } = (error ?? {}) as {
    code?: string;
    message?: string;
    position?: number;
  };
  const text = String(message ?? error).slice(0, 300);
  const runaway = code === 'D1011' || code === 'D1012';
  const at = position === undefined || runaway ? '' : ` (at position ${position})`;
  return new MappingFailed(runaway, `${code ? `${code}: ` : ''}${text}${at}`);
}

/**
 * Record path → the input names its value reads, from the expression's object constructors:
 * each `"key": value` pair extends the path, and the field names in `value` (not inside a nested
 * object constructor, which has keys of its own) are what it reads.
 */
function fieldTable(ast: jsonata.ExprNode): Map<string, readonly string[]> {
  const table = new Map<string, string[]>();
  const seen = new Set<object>(); // the parser links some nodes to others (ancestors, slots)
  const visit = (node: unknown, path: string, reads: string[] | undefined): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item, path, reads);
      return;
    }
    if (typeof node !== 'object' || node === null || seen.has(node)) return;
    seen.add(node);
    const n = node as jsonata.ExprNode & Record<string, unknown>;
    if (n.type === 'unary' && n.value === '{' && Array.isArray(n.lhs)) {
      for (const pair of n.lhs as unknown[]) {
        if (!Array.isArray(pair) || pair.length !== 2) continue;
        const [key, value] = pair as [jsonata.ExprNode, jsonata.ExprNode];
        if (key.type !== 'string' || typeof key.value !== 'string') {
          visit(value, path, reads);
          continue;
        }
        const at = path === '' ? key.value : `${path}.${key.value}`;
        const own: string[] = [];
        visit(value, at, own);
        if (own.length > 0) table.set(at, [...new Set([...(table.get(at) ?? []), ...own])]);
      }
      return;
    }
    if (n.type === 'name' && typeof n.value === 'string') reads?.push(n.value);
    for (const key of Object.keys(n)) {
      if (key === 'type' || key === 'value' || key === 'position') continue;
      visit(n[key], path, reads);
    }
  };
  visit(ast, '', undefined);
  return table;
}
