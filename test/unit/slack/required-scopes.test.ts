import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { REQUIRED_BOT_SCOPES } from '../../../src/slack/required-scopes.ts';

describe('REQUIRED_BOT_SCOPES', () => {
  it("are exactly the app manifest's bot scopes, which the doctor compares with what Slack granted", () => {
    // Arrange
    const manifest = parseYaml(readFileSync(new URL('../../../manifests/slack-app.yaml', import.meta.url), 'utf8')) as {
      oauth_config: { scopes: { bot: string[] } };
    };

    // Act / Assert
    expect(Object.keys(REQUIRED_BOT_SCOPES).sort()).toEqual([...manifest.oauth_config.scopes.bot].sort());
  });
});
