import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REQUIRED_BOT_SCOPES } from '../../../src/slack/required-scopes.ts';
import { renderScopeTable, replaceScopeTable } from '../../../src/slack/scope-table.ts';

const DEPLOY = new URL('../../../docs/deploy.md', import.meta.url);

describe('the scope table of docs/deploy.md', () => {
  it('is what `npm run docs:scopes` writes from the required scopes today', () => {
    const doc = readFileSync(DEPLOY, 'utf8');
    expect(doc, 'docs/deploy.md has a stale scope table: run `npm run docs:scopes` and commit it').toBe(
      replaceScopeTable(doc, REQUIRED_BOT_SCOPES),
    );
  });

  it('has a row for every required scope, with what the bot uses it for', () => {
    const doc = readFileSync(DEPLOY, 'utf8');
    const rows = [...doc.matchAll(/^\s*\| `([a-z:]+)` \| (.+) \|$/gm)].map((m) => [m[1]!, m[2]!]);
    expect(Object.fromEntries(rows)).toEqual(REQUIRED_BOT_SCOPES);
  });

  it('is replaced between its markers only, keeping the indentation of the list item it sits in', () => {
    // Arrange
    const before =
      'Intro\n   <!-- scopes: written by `npm run docs:scopes` from src/slack/required-scopes.ts -->\n\n   | old |\n\n   <!-- end of scopes -->\nAfter\n';

    // Act
    const after = replaceScopeTable(before, { 'chat:write': 'messages' });

    // Assert
    expect(after).toBe(
      `Intro\n   <!-- scopes: written by \`npm run docs:scopes\` from src/slack/required-scopes.ts -->\n\n${renderScopeTable({ 'chat:write': 'messages' }, '   ')}\n\n   <!-- end of scopes -->\nAfter\n`,
    );
    expect(() => replaceScopeTable('no markers', {})).toThrow(/markers/);
  });
});
