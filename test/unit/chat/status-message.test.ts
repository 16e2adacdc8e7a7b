import { describe, expect, it } from 'vitest';
import { escapeMrkdwnKeepingLinks, operationRef, plainLinks } from '../../../src/chat/operation-link.ts';
import { operationRootMessage } from '../../../src/chat/operation-root.ts';
import { statusSummaryText, statusText } from '../../../src/chat/status-message.ts';
import { presentationOf } from '../../../jobs/playbooks/index.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { anOperation } from '../../support/builders.ts';

const LINK = 'https://talos-test.slack.com/archives/C0MAINTPRD/p1700000000000100';

function operation(overrides: Partial<Operation> = {}): Operation {
  return anOperation({
    state: 'running',
    revision: 3,
    steps: [{ id: 'node-10.0.30.11', kind: 'upgrade-control-plane', node: '10.0.30.11', status: 'running' }],
    ...overrides,
  });
}

describe('operationRef', () => {
  it('links to the thread once the link is known, else names the id as code', () => {
    expect(operationRef('op-1a2b3c4d5e', LINK)).toBe(`<${LINK}|op-1a2b3c4d5e>`);
    expect(operationRef('op-1a2b3c4d5e', undefined)).toBe('`op-1a2b3c4d5e`');
  });

  it("escapes a reply's link so its query stays inside the link", () => {
    const reply = `${LINK}?thread_ts=1700000000.000100&cid=C0MAINTPRD`;
    expect(operationRef('op-1a2b3c4d5e', reply)).toBe(`<${LINK}?thread_ts=1700000000.000100&amp;cid=C0MAINTPRD|op-1a2b3c4d5e>`);
  });
});

describe('escapeMrkdwnKeepingLinks', () => {
  it('keeps links to operations and escapes everything else', () => {
    // Arrange
    const refusal = `operation ${operationRef('op-aaaa1111', LINK)} holds production; <!channel> & <https://evil.example|op-bbbb2222>`;

    // Act
    const escaped = escapeMrkdwnKeepingLinks(refusal);

    // Assert
    expect(escaped).toBe(
      `operation <${LINK}|op-aaaa1111> holds production; &lt;!channel&gt; &amp; &lt;https://evil.example|op-bbbb2222&gt;`,
    );
  });

  it('reads a link as its operation id where the text is not mrkdwn', () => {
    expect(plainLinks(`operation <${LINK}|op-aaaa1111> holds production`)).toBe('operation op-aaaa1111 holds production');
  });

  it("shows a refusal's link to the holder in the refused plan", () => {
    // Arrange
    const op = operation({
      state: 'refused',
      refusals: [`operation <${LINK}|op-aaaa1111> holds production; wait for it to finish, or \`/talos cancel op-aaaa1111\``],
    });

    // Act
    const blocks = JSON.stringify(operationRootMessage(op, presentationOf(op.kind)).blocks);

    // Assert
    expect(blocks).toContain(`operation <${LINK}|op-aaaa1111> holds production`);
  });
});

describe('/talos status', () => {
  it("links each operation and the lock's holder to its thread in the cluster's channel", () => {
    // Arrange
    const running = operation();
    const done = operation({ id: 'op-0000aaaa11', state: 'completed' });
    const links = new Map([[running.id, LINK]]);

    // Act
    const text = statusText([{ cluster: 'production', holder: running.id, ops: [running, done] }], presentationOf, links);

    // Assert
    expect(text.split('\n')).toEqual([
      `*production* — locked by <${LINK}|op-1a2b3c4d5e>`,
      expect.stringMatching(
        new RegExp(`^• <${LINK}\\|op-1a2b3c4d5e> talos-upgrade → v1\\.12\\.1 on \\*production\\*: running · 0/1 steps · now: `),
      ),
      '  _recent:_',
      expect.stringMatching(/^• `op-0000aaaa11` talos-upgrade → v1\.12\.1 on \*production\*: completed/),
    ]);
  });

  it('lists an operation waiting for its window with the running ones', () => {
    const waiting = operation({ state: 'waiting-window' });
    expect(statusText([{ cluster: 'production', holder: waiting.id, ops: [waiting] }], presentationOf).split('\n')[1]).toMatch(
      /^• `op-1a2b3c4d5e` .*: waiting-window/,
    );
  });

  it("outside the clusters' channels shows only who holds each cluster, and where its channel is", () => {
    // Act
    const text = statusSummaryText(
      [
        { cluster: 'staging', channel: 'C0MAINTSTG', holder: undefined },
        { cluster: 'production', channel: 'C0MAINTPRD', holder: 'op-1a2b3c4d5e' },
      ],
      new Map([['op-1a2b3c4d5e', LINK]]),
    );

    // Assert
    expect(text).toBe(
      [
        '*staging* (<#C0MAINTSTG>) — no operation holds it',
        `*production* (<#C0MAINTPRD>) — held by <${LINK}|op-1a2b3c4d5e>`,
        "Each cluster's operations, with their progress, are listed by `/talos status` in its own channel.",
      ].join('\n'),
    );
  });
});
