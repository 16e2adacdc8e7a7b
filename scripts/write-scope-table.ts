// Writes the bot scope table of docs/deploy.md from src/slack/required-scopes.ts: `npm run docs:scopes`.
// test/unit/slack/scope-table.test.ts fails when the page and the list disagree.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { REQUIRED_BOT_SCOPES } from '../src/slack/required-scopes.ts';
import { replaceScopeTable } from '../src/slack/scope-table.ts';

const target = fileURLToPath(new URL('../docs/deploy.md', import.meta.url));
writeFileSync(target, replaceScopeTable(readFileSync(target, 'utf8'), REQUIRED_BOT_SCOPES));
console.log(`wrote the scope table of ${target}`);
