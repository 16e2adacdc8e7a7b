import { describe, expect, it } from 'vitest';
import { blocksHtml } from './blocks-html.ts';
import { escapeHtml, type MarkupNames, mrkdwnToHtml } from './mrkdwn-html.ts';

const names: MarkupNames = {
  readable: (token) =>
    ({ '<@U0CAROL>': '@carol', '<#C0MAINTPRD>': '#maint-production' })[token] ?? token.replace(/^<!date\^\d+\^[^|]*\|(.*)>$/, '$1'),
};

describe('mrkdwn as HTML', () => {
  it('renders bold, italic, strike, code, quotes, mentions, dates and links', () => {
    expect(mrkdwnToHtml('*Blocking:* _node_ ~old~ `talosctl health`', names)).toBe(
      '<b>Blocking:</b> <i>node</i> <s>old</s> <code>talosctl health</code>',
    );
    expect(mrkdwnToHtml('> asked by <@U0CAROL> in <#C0MAINTPRD>\nexpires <!date^1796451840^{time}|21:54 UTC>', names)).toBe(
      '<blockquote>asked by <span class="mention">@carol</span> in <span class="mention">#maint-production</span></blockquote>expires <time>21:54 UTC</time>',
    );
    expect(mrkdwnToHtml('<https://example.org/a?b=1&amp;c=2|the *record*>', names)).toBe(
      '<a href="https://example.org/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">the *record*</a>',
    );
    expect(mrkdwnToHtml('```\nv1 &lt; v2 *kept*\n```', names)).toBe('<pre>v1 &lt; v2 *kept*\n</pre>');
  });

  it('escapes every text: no markup of a message reaches the page as HTML', () => {
    const hostile = '<img src=x onerror=alert(1)> &lt;script&gt;alert(2)&lt;/script&gt; "quoted" \'single\'';
    const html = mrkdwnToHtml(hostile, names);
    expect(html).not.toMatch(/<img|<script/);
    expect(html).toContain('&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(html).toContain('&quot;quoted&quot; &#39;single&#39;');
    // A link whose target is not http(s) or mailto shows its label only.
    expect(mrkdwnToHtml('<javascript:alert(1)|click me>', names)).toBe('click me');
    expect(mrkdwnToHtml('`<b>` \uE0000\uE000', names)).toBe('<code>&lt;b&gt;</code> 0');
    expect(escapeHtml('<a href="x">')).toBe('&lt;a href=&quot;x&quot;&gt;');
  });
});

describe('Block Kit as HTML', () => {
  it('renders a section, context and actions with the data a click sends, and a confirm dialog', () => {
    const html = blocksHtml(
      [
        {
          type: 'section',
          text: { type: 'mrkdwn', text: 'Approve *talos-prd-cp-1*?' },
          fields: [{ type: 'mrkdwn', text: '*From*\nv1.11.6' }],
        },
        {
          type: 'context',
          elements: [
            { type: 'mrkdwn', text: 'node 1 of 3' },
            { type: 'plain_text', text: 'etcd 3/3' },
          ],
        },
        {
          type: 'actions',
          block_id: 'decide',
          elements: [
            {
              type: 'button',
              action_id: 'talos-step-approve',
              value: 'op-1.n"1',
              style: 'primary',
              text: { type: 'plain_text', text: 'Approve <cp-1>' },
              confirm: {
                title: { type: 'plain_text', text: 'Upgrade cp-1?' },
                text: { type: 'mrkdwn', text: 'It *reboots*' },
                confirm: { type: 'plain_text', text: 'Approve' },
                deny: { type: 'plain_text', text: 'Not yet' },
              },
            },
          ],
        },
      ],
      { surface: { kind: 'message', channel: 'C0MAINTPRD', ts: '1796451840.556000' }, names },
    );
    expect(html).toContain('Approve <b>talos-prd-cp-1</b>?');
    expect(html).toContain('<div class="field"><b>From</b><br>v1.11.6</div>');
    expect(html).toContain('node 1 of 3</span><span class="dot"> · </span><span>etcd 3/3');
    expect(html).toContain(
      '<button type="button" class="btn primary" data-act="click" data-surface="message" data-channel="C0MAINTPRD" data-ts="1796451840.556000" data-action-id="talos-step-approve" data-block-id="decide" data-value="op-1.n&quot;1">Approve &lt;cp-1&gt;</button>',
    );
    expect(html).toContain('<div class="confirm-text">It <b>reboots</b></div>');
    expect(html).toContain('data-confirm="deny">Not yet</button>');
  });

  it("renders a modal's inputs with the values its state holds and the bot's errors", () => {
    const html = blocksHtml(
      [
        {
          type: 'input',
          block_id: 'version',
          label: { type: 'plain_text', text: 'Version' },
          element: {
            type: 'static_select',
            action_id: 'v',
            options: [
              { text: { type: 'plain_text', text: 'v1.12.11' }, value: 'v1.12.11' },
              { text: { type: 'plain_text', text: 'v1.13.0' }, value: 'v1.13.0' },
            ],
          },
        },
        {
          type: 'input',
          block_id: 'review',
          label: { type: 'plain_text', text: 'Reviewed' },
          element: { type: 'checkboxes', action_id: 'r', options: [{ text: { type: 'mrkdwn', text: '*notes*' }, value: 'notes' }] },
        },
        {
          type: 'input',
          block_id: 'reason',
          optional: true,
          label: { type: 'plain_text', text: 'Reason' },
          element: { type: 'plain_text_input', action_id: 't', multiline: true },
        },
      ],
      {
        surface: { kind: 'view', viewId: 'V1' },
        names,
        values: {
          version: { v: { type: 'static_select', selected_option: { value: 'v1.13.0' } } },
          review: { r: { type: 'checkboxes', selected_options: [{ value: 'notes' }] } },
          reason: { t: { type: 'plain_text_input', value: '</textarea><script>' } },
        },
        errors: { review: 'Tick every item <first>' },
      },
    );
    expect(html).toContain('<option value="v1.13.0" selected>v1.13.0</option>');
    expect(html).toContain('<input type="checkbox" name="review" value="notes" checked> <b>notes</b>');
    expect(html).toContain('<textarea name="reason" rows="3">&lt;/textarea&gt;&lt;script&gt;</textarea>');
    expect(html).toContain('⚠ Tick every item &lt;first&gt;');
    expect(html).toContain('<span class="optional">(optional)</span>');
  });
});
