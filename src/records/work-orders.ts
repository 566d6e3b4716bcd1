/**
 * Work orders (kitting, assembly and other value-added work), spec §2.7. The spec has no
 * "M" column here, so every listed field is required. Roles shape the order: exactly one
 * finished good line (the product made) and at least one component line (what it is made of).
 */
import { z } from 'zod';
import type { RecordKind } from './kind.js';
import { id, nonEmptyArray, obj, quantity, text } from './fields.js';

export const LINE_ROLES = ['finished_good', 'component'] as const;

/** Which quantity each role must carry. */
const QUANTITY_FOR_ROLE = { finished_good: 'ordered', component: 'required' } as const;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The role rules are checks with `when`: zod skips plain refinements once a value has an
 * issue, and a record must list every failing field, not just the first few.
 * Each `when` runs the rule only where it is meaningful (an object line / a non-empty array).
 */
const roleQuantity = z.superRefine<Record<string, unknown>>(
  (line, ctx) => {
    const role = line.role;
    const quantities = line.quantities;
    if ((role !== 'finished_good' && role !== 'component') || !isObject(quantities)) return;
    const key = QUANTITY_FOR_ROLE[role];
    if (quantities[key] === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'Required',
        path: ['quantities', key],
        input: undefined,
      });
    }
  },
  { when: (payload) => isObject(payload.value) },
);

const lineCounts = z.superRefine<unknown[]>(
  (lines, ctx) => {
    let finished = 0;
    let components = 0;
    for (const line of lines) {
      if (!isObject(line)) continue;
      if (line.role === 'finished_good') finished++;
      else if (line.role === 'component') components++;
    }
    if (finished !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `Expected exactly 1 finished_good line, received ${finished}`,
        input: lines,
      });
    }
    if (components < 1) {
      ctx.addIssue({
        code: 'custom',
        message: 'Expected at least 1 component line, received 0',
        input: lines,
      });
    }
  },
  // An empty array already reports "Expected at least 1 item"; counting it again adds noise.
  { when: (payload) => Array.isArray(payload.value) && payload.value.length > 0 },
);

const line = obj({
  workOrderId: text,
  line: text,
  skuId: text,
  role: z.enum(LINE_ROLES),
  // Both quantities are optional by shape; which one is required depends on `role`.
  quantities: obj({ ordered: quantity.optional(), required: quantity.optional() }),
}).check(roleQuantity);

export const workOrderSchema = obj({
  identifiers: obj({ id, businessId: id, customerId: text }),
  workOrder: obj({ type: text, class: text, customerRef: text }),
  location: obj({ site: text, warehouse: text, ownerId: text }),
  lines: nonEmptyArray(line).check(lineCounts),
});

export type WorkOrder = z.infer<typeof workOrderSchema>;

export const workOrders: RecordKind<typeof workOrderSchema> = {
  name: 'work-orders',
  label: 'work order',
  // Not `z.compile`d like the other kinds: the compiler cannot express checks with `when`, and
  // running them as runtime islands measured slower than the plain runtime parser.
  schema: workOrderSchema,
  businessIdPath: ['identifiers', 'businessId'],
  referencePath: ['identifiers', 'id'],
  platformFields: [],
};
