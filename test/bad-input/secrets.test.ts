/**
 * The scrubber against hostile secrets: a credential with a quote, a backslash or a control
 * character is written escaped inside JSON (Slack blocks, log lines) and must be blanked there
 * too; and the Terraform settings that merely name the cluster are never taken for secrets.
 */
import { Writable } from 'node:stream';
import type { WebClient } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { parseInventory } from '../../src/config/inventory.ts';
import { secretClashes } from '../../src/config/secret-clashes.ts';
import { createLogger } from '../../src/log/logger.ts';
import { isSecretVariable, secretEnvValues } from '../../src/log/process-secrets.ts';
import { SecretScrubber } from '../../src/log/secret-scrubber.ts';
import { createSlackChat } from '../../src/slack/slack-chat.ts';
import { readStringLines } from './corpus.ts';
import { VALID_INVENTORY } from './inventory-fixture.ts';

const SECRETS = readStringLines('secrets.txt');
const SETTINGS = readStringLines('tofu-settings.txt').map((line) => {
  const at = line.indexOf('=');
  return [line.slice(0, at), line.slice(at + 1)] as const;
});

/** Every form a secret takes in JSON text: raw, escaped once, and escaped again inside a quoted JSON string. */
function forms(secret: string): string[] {
  const once = JSON.stringify(secret).slice(1, -1);
  return [secret, once, JSON.stringify(once).slice(1, -1)];
}

/** A Web API client that keeps what the bot sends. */
function capturingClient(): { client: WebClient; sent: Record<string, unknown>[] } {
  const sent: Record<string, unknown>[] = [];
  const client = {
    chat: {
      postMessage: (args: Record<string, unknown>) => (sent.push(args), Promise.resolve({ ok: true, ts: '1700000000.000100' })),
    },
  } as unknown as WebClient;
  return { client, sent };
}

function collectingLogger(scrubber: SecretScrubber): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      callback();
    },
  });
  return { logger: createLogger({ level: 'info', scrubber, destination }), lines };
}

describe('hostile secrets', () => {
  it.each(SECRETS)('blanks %j out of a Slack message and a log line, raw and JSON-escaped', async (secret) => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(secret);
    const { client, sent } = capturingClient();
    const chat = createSlackChat(client, scrubber);
    const { logger, lines } = collectingLogger(scrubber);
    const evidence = `tofu said: provider rejected ${secret} on production`;

    // Act
    await chat.post('C0MAINTPRD', {
      text: evidence,
      blocks: [
        { type: 'section', text: { type: 'mrkdwn', text: evidence } },
        {
          type: 'rich_text',
          elements: [{ type: 'rich_text_preformatted', elements: [{ type: 'text', text: JSON.stringify({ stderr: evidence }) }] }],
        },
      ],
    });
    logger.warn({ stderr: evidence, err: new Error(JSON.stringify({ detail: evidence })) }, evidence);

    // Assert: nothing of the secret in any form, and both are still valid and still name the cluster.
    const slack = JSON.stringify(sent);
    expect(sent).toHaveLength(1);
    expect(lines).toHaveLength(1);
    for (const form of forms(secret)) {
      expect(slack).not.toContain(form);
      expect(lines[0]).not.toContain(form);
    }
    expect(JSON.stringify(sent[0]!.blocks)).toContain('rejected [REDACTED] on production');
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'tofu said: provider rejected [REDACTED] on production' });
  });
});

describe('Terraform settings', () => {
  it.each(SETTINGS)('never takes %s for a secret', (name, value) => {
    // Arrange
    const scrubber = new SecretScrubber();

    // Act
    for (const secret of secretEnvValues({ [name]: value })) scrubber.add(secret);

    // Assert
    expect(isSecretVariable(name)).toBe(false);
    expect(scrubber.scrub(`upgrade of production to v1.12.11: ${value}`)).toBe(`upgrade of production to v1.12.11: ${value}`);
  });
});

describe('a secret that equals what the bot shows', () => {
  const inventory = parseInventory(VALID_INVENTORY, 'clusters.yaml');

  it.each([
    ['TF_VAR_proxmox_api_token', 'production'],
    ['TF_VAR_api_key', 'C0MAINTPRD'],
    ['TF_HTTP_PASSWORD', '10.0.30.12'],
    ['PROXMOX_VE_PASSWORD', 'v1.11.6'],
    ['TF_VAR_db_password', '1.34.1'],
  ])('is refused at start, naming %s and not its value', (name, value) => {
    // Act
    const problems = secretClashes([[name, value]], inventory);

    // Assert
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(name);
    expect(problems[0]).not.toContain(value);
  });

  it('lets a real secret through', () => {
    expect(secretClashes([['TF_VAR_proxmox_api_token', 'root@pam!bot=6f1d0c2e-93b4-4a55-8e0f-1c2d3e4f5a6b']], inventory)).toEqual([]);
  });
});
