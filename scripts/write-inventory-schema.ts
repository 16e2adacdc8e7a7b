// Writes docs/inventory.schema.json, the inventory's JSON Schema for editors: `npm run docs:schema`.
// test/unit/config/inventory-schema.test.ts fails when the file and the schema disagree.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderInventorySchema } from '../src/config/inventory.ts';

const target = fileURLToPath(new URL('../docs/inventory.schema.json', import.meta.url));
writeFileSync(target, renderInventorySchema());
console.log(`wrote ${target}`);
