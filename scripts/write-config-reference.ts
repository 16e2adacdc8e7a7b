// Writes docs/configuration.md from the environment schema: `npm run docs:config`.
// test/unit/config-reference.test.ts fails when the page and the schema disagree.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PASSED_VARIABLES, renderConfigReference } from '../src/config/config-reference.ts';
import { EnvSchema } from '../src/config/env.ts';

const target = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
writeFileSync(target, renderConfigReference(EnvSchema, PASSED_VARIABLES));
console.log(`wrote ${target}`);
