import { describe, expect, it } from 'vitest';
import { escapeMrkdwnKeepingLinks, operationRef, plainLinks } from '../../../src/chat/operation-link.ts';
import { operationRootMessage } from '../../../src/chat/operation-root.ts';
import { statusMessage, statusSummaryText, statusText } from '../../../src/chat/status-message.ts';
import { STATUS_ACTION } from '../../../src/chat/buttons.ts';
import { presentationOf } from '../../../jobs/playbooks/index.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import type { GateOrigin } from '../../../src/ops/cluster-signals.ts';
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
        new RegExp(`^• <${LINK}\\|op-1a2b3c4d5e> Talos upgrade to v1\\.12\\.1 on \\*production\\*: running · 0/1 steps · now: `),
      ),
      '  _recent:_',
      expect.stringMatching(/^• `op-0000aaaa11` Talos upgrade to v1\.12\.1 on \*production\*: completed/),
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

describe('statusMessage', () => {
  const PRODUCTION = { name: 'production', approvers: ['U0CAROL', 'S0SRE'] };

  function buttonsOf(message: ReturnType<typeof statusMessage>, opId: string): Record<string, unknown>[] {
    const block = message.blocks!.find((b) => b['type'] === 'actions' && b['block_id'] === `status-${opId}`);
    return (block?.['elements'] as Record<string, unknown>[] | undefined) ?? [];
  }

  it('leads with the cluster in words: the operation, the step and whom it waits for', () => {
    // Arrange
    const waiting = operation({
      state: 'awaiting-approval',
      steps: [
        { id: 's0', kind: 'snapshot', status: 'done' },
        { id: 'node-10.0.30.11', kind: 'upgrade-control-plane', node: '10.0.30.11', nodeName: 'talos-prd-cp-1', status: 'done' },
        { id: 'node-10.0.30.12', kind: 'upgrade-control-plane', node: '10.0.30.12', nodeName: 'talos-prd-cp-2', status: 'pending' },
      ],
      approvals: [
        {
          step: 'node-10.0.30.12',
          nonce: 'n0nce1',
          messageTs: '1.2',
          requestedAt: '2026-11-29T22:00:00.000Z',
          expiresAt: '2026-11-29T22:30:00.000Z',
          state: 'pending',
        },
      ],
    });

    // Act
    const message = statusMessage(
      [{ cluster: PRODUCTION, holder: waiting.id, ops: [waiting] }],
      presentationOf,
      new Map([[waiting.id, LINK]]),
    );

    // Assert
    const headline = (message.blocks![0]!['text'] as { text: string }).text;
    expect(headline).toMatch(/^\*production\* — Talos upgrade to v1\.12\.1 running, step 3 of 3: control plane talos-prd-cp-2/);
    expect(headline).toContain('waiting for approval from <@U0CAROL> or <!subteam^S0SRE>');
    expect(headline).toContain(`locked by <${LINK}|op-1a2b3c4d5e>`);
    expect(message.text.split('\n')[0]).toBe(headline);
  });

  it('gives each operation Open thread (a link), Record, and Cancel with a confirm while it runs or waits', () => {
    // Arrange
    const running = operation();
    const done = operation({ id: 'op-0000aaaa11', state: 'completed' });

    // Act
    const message = statusMessage(
      [{ cluster: PRODUCTION, holder: running.id, ops: [running, done] }],
      presentationOf,
      new Map([[running.id, LINK]]),
    );

    // Assert
    const live = buttonsOf(message, running.id);
    expect(live.map((b) => [b['action_id'], b['value']])).toEqual([
      [STATUS_ACTION.open, running.id],
      [STATUS_ACTION.record, running.id],
      [STATUS_ACTION.cancel, running.id],
    ]);
    expect(live[0]!['url']).toBe(LINK);
    expect(live[2]!['confirm']).toMatchObject({ title: { text: 'Cancel this operation?' } });
    // Finished: nothing to cancel, and no link known yet.
    expect(buttonsOf(message, done.id).map((b) => b['action_id'])).toEqual([STATUS_ACTION.record]);
  });

  it('says when the last health gate ran and since when its verdict has held, or that none is on record', () => {
    // Arrange
    const at = Date.parse('2026-11-30T10:00:00Z') / 1000;
    const failing = { last: { verdict: 'failed' as const, at, since: at - 7200 } };

    // Act
    const failed = statusMessage([{ cluster: PRODUCTION, holder: undefined, ops: [], gate: failing }], presentationOf).text;
    const once = statusMessage(
      [{ cluster: PRODUCTION, holder: undefined, ops: [], gate: { last: { verdict: 'passed', at, since: at } } }],
      presentationOf,
    ).text;
    const none = statusMessage([{ cluster: PRODUCTION, holder: undefined, ops: [], gate: {} }], presentationOf).text;

    // Assert
    expect(failed.split('\n')[1]).toBe(
      `Last health gate: ❌ failed <!date^${at}^{date_short_pretty} {time}|2026-11-30 10:00 UTC>, failing since <!date^${at - 7200}^{date_short_pretty} {time}|2026-11-30 08:00 UTC>`,
    );
    expect(once.split('\n')[1]).toBe(`Last health gate: ✅ passed <!date^${at}^{date_short_pretty} {time}|2026-11-30 10:00 UTC>`);
    expect(none.split('\n')[1]).toBe('Last health gate: none on record; run `/talos health` to see where the cluster stands');
  });

  it('says who ran the newest gate: a person, the schedule, or an operation named as people name it', () => {
    // Arrange
    const at = Date.parse('2026-11-30T10:00:00Z') / 1000;
    const gate = (origin: GateOrigin) => ({ last: { verdict: 'passed' as const, at, since: at, origin } });
    const links = new Map([['op-0000bbbb22', LINK]]);
    const line = (origin: GateOrigin) =>
      statusMessage([{ cluster: PRODUCTION, holder: undefined, ops: [], gate: gate(origin) }], presentationOf, links).text.split('\n')[1];

    // Act / Assert
    expect(line({ by: 'command', user: 'U0BOB' })).toMatch(
      /^Last health gate: ✅ passed <!date\^\d+\^[^>]+> · `\/talos health` by <@U0BOB>$/,
    );
    expect(line({ by: 'schedule' })).toMatch(/ · the scheduled gate$/);
    expect(line({ by: 'operation', opId: 'op-0000bbbb22', title: 'Replacement of talos-prd-cp-2' })).toMatch(
      new RegExp(` · from Replacement of talos-prd-cp-2 \\(<${LINK}\\|op-0000bbbb22>\\)$`),
    );
  });

  it('names an operation by its node name from the last look at the cluster, never by the kind and an address', () => {
    // Arrange
    const replace = operation({ id: 'op-0000cccc33', kind: 'node-replace', state: 'completed', target: { node: '10.0.30.12' } });

    // Act
    const { text } = statusMessage(
      [{ cluster: PRODUCTION, holder: undefined, ops: [replace], names: { '10.0.30.12': 'talos-prd-cp-2' } }],
      presentationOf,
    );

    // Assert
    expect(text).toContain('Replacement of talos-prd-cp-2');
    expect(text).not.toMatch(/node-replace|of 10\.0\.30\.12/);
  });

  it('says idle, and what ran last, when nothing runs', () => {
    const done = operation({ state: 'completed', endedAt: '2026-11-29T23:00:00.000Z' });
    const message = statusMessage([{ cluster: PRODUCTION, holder: undefined, ops: [done] }], presentationOf);
    expect(message.text.split('\n')[0]).toMatch(
      /^\*production\* — idle, no operation holds it; last: Talos upgrade to v1\.12\.1 completed <!date\^/,
    );
    expect(statusMessage([{ cluster: PRODUCTION, holder: undefined, ops: [] }], presentationOf).text).toBe(
      '*production* — idle, no operation holds it; no operations yet',
    );
  });
});
