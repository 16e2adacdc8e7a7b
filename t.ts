import { z } from 'zod';
import { InventorySchema } from './src/config/inventory.ts';
console.log(JSON.stringify(z.toJSONSchema(InventorySchema, { io: 'input', target: 'draft-2020-12' }), null, 1).slice(0, 3000));
