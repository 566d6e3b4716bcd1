// Request bodies, built once from the valid sales-order fixture: every record gets its own
// shipment id, so records (and the service's content-derived message ids) differ.
import { readFileSync } from 'node:fs';

const FIXTURE = new URL('../fixtures/sales-orders/valid.json', import.meta.url);
export const PATH = '/api/v2/sales-orders';
const templates = JSON.parse(readFileSync(FIXTURE, 'utf8'));
export const BUSINESS_ID = templates[0].identifiers.businessId;

function salesOrder(n) {
  const record = structuredClone(templates[n % templates.length]);
  const shipmentId = `BENCH-${process.pid}-${n}`;
  record.identifiers.shipmentId = shipmentId;
  for (const list of [record.shipAddresses, record.shipContacts, record.shipmentLines]) {
    for (const item of list ?? []) item.shipmentId = shipmentId;
  }
  return record;
}

/** `count` JSON-array bodies of `size` distinct records each. */
export function batches(count, size) {
  const bodies = [];
  let n = 0;
  for (let b = 0; b < count; b++) {
    const records = Array.from({ length: size }, () => salesOrder(n++));
    bodies.push(Buffer.from(JSON.stringify(records)));
  }
  return bodies;
}

export function basicAuth(user, password) {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}
