/**
 * The browser demo in a real browser: Debian's Chromium, headless, driven by playwright-core (no
 * browser download). A production Talos upgrade is run by clicks only: the command typed as the
 * operator, the missing staging rehearsal overridden by two approvers, Start, and each control
 * plane's approval confirmed in its dialog, until the page shows the operation completed. A
 * screenshot of the page is kept in test-output/web-demo/.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebDemo, type WebDemo } from '../demo/web/web-demo.ts';
import { CHANNELS, USERS } from '../support/harness.ts';

const SCREENSHOTS = join(import.meta.dirname, '..', '..', 'test-output', 'web-demo');

/** Debian's Chromium (`apt-get install chromium`, as scripts/ensure-tools.sh test does), or CHROMIUM_PATH. */
function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
    (p): p is string => p !== undefined && p !== '',
  );
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined)
    throw new Error(
      `No Chromium found (looked at ${candidates.join(', ')}): run \`bash scripts/ensure-tools.sh test\` (Debian's package chromium) or set CHROMIUM_PATH`,
    );
  return found;
}

describe('the browser demo', () => {
  let demo: WebDemo;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
    demo = await startWebDemo({ rebootMs: 400 });
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.goto(demo.url);
    await page.locator('body[data-ready="true"]').waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await demo?.stop();
  });

  async function actAs(user: string): Promise<void> {
    await page.selectOption('#user', user);
  }

  /** A click on a bot's button; when it asks to be confirmed, its dialog's confirm button too. */
  async function click(button: Locator): Promise<void> {
    await button.click();
    const dialog = page.locator('#dialog');
    if (await dialog.isVisible()) await dialog.locator('[data-confirm="yes"]').click();
  }

  it('runs a production Talos upgrade by clicks, the approver approving each control plane in the page', async () => {
    try {
      // The operator types the command in #maint-production.
      await actAs(USERS.alice);
      await page.locator(`[data-nav-channel="${CHANNELS.production}"]`).click();
      await page.fill('#command', '/talos upgrade talos v1.12.11');
      await page.press('#command', 'Enter');
      const start = page.locator('#channel button[data-action-id="talos-op-start"]');
      await start.waitFor({ timeout: 60_000 });
      const rootTs = (await start.getAttribute('data-ts')) ?? '';
      const root = page.locator(`#channel .message[data-ts="${rootTs}"]`);
      await expect.poll(() => root.innerText()).toMatch(/planned/);

      // No staging rehearsal in the records: two approvers override it, as the runbook asks.
      const override = root.locator('button[data-action-id="talos-op-override"]');
      await actAs(USERS.carol);
      await click(override);
      await expect.poll(() => root.innerText(), { timeout: 30_000 }).toMatch(/overridden by @carol/);
      await actAs(USERS.dave);
      await click(override);
      await expect.poll(() => root.innerText(), { timeout: 30_000 }).toMatch(/and @dave/);

      // The operator ticks what the plan asks to be checked, and starts.
      await actAs(USERS.alice);
      for (const box of await root.locator('.checkboxes input[type="checkbox"]').all()) await box.check();
      await click(root.locator('button[data-action-id="talos-op-start"]'));

      // The approver opens the thread and approves each control plane as its request appears.
      await actAs(USERS.carol);
      await root.locator('[data-act="open-thread"]').click({ timeout: 60_000 });
      const approvals: string[] = [];
      const approve = page.locator('#thread button[data-action-id="talos-step-approve"]').first();
      const ended = async (): Promise<boolean> => /completed|stopped|cancelled/.test(await root.innerText());
      for (;;) {
        await expect.poll(async () => (await approve.count()) > 0 || (await ended()), { timeout: 90_000 }).toBe(true);
        if ((await approve.count()) === 0 && (await ended())) break;
        const request = (await approve.getAttribute('data-ts')) ?? '';
        approvals.push(request);
        await click(approve);
        // The request is edited to its outcome: its buttons go, so the next one in the thread is the next node's.
        await page
          .locator(`#thread button[data-action-id="talos-step-approve"][data-ts="${request}"]`)
          .waitFor({ state: 'detached', timeout: 30_000 });
      }

      // The page shows the operation completed; the estate and Slack agree.
      await expect.poll(() => root.innerText()).toMatch(/completed/);
      const { harness } = demo;
      expect(harness.slack.message(CHANNELS.production, rootTs)?.text).toMatch(/completed/);
      const production = harness.sim.cluster('production');
      const controlPlanes = production.nodes.filter((n) => n.role === 'controlplane').map((n) => n.hostname);
      expect(approvals).toHaveLength(controlPlanes.length);
      expect(new Set(approvals).size).toBe(controlPlanes.length);
      expect(production.nodes.map((n) => [n.hostname, n.talosVersion])).toEqual(production.nodes.map((n) => [n.hostname, 'v1.12.11']));
      for (const node of production.nodes) expect(harness.sim.upgradeCount('production', node.hostname)).toBe(1);
      await expect.poll(() => page.locator('#thread').innerText()).toContain('✅ Approved');
    } finally {
      await mkdir(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: join(SCREENSHOTS, 'production-upgrade.png'), fullPage: true });
    }
  }, 300_000);

  it('breaks the cluster from the page: a disruption budget that allows no disruption fails the health gate, and clearing it leaves no fault', async () => {
    const { harness } = demo;
    await actAs(USERS.alice);
    await page.selectOption('#break-cluster', 'production');
    await page.selectOption('#break-kind', 'budget-blocks');
    await page.selectOption('#break-target', 'postgres');
    await page.click('#break-set');
    await expect.poll(() => page.locator('#estate [data-cluster="production"] .faults').innerText()).toContain('pdbBlocked: ["postgres"]');
    expect(harness.sim.faults.get('production').pdbBlocked).toEqual(['postgres']);

    const gates = harness.slack.channelMessages(CHANNELS.production).length;
    await page.fill('#command', '/talos health');
    await page.press('#command', 'Enter');
    const failed = page.locator('#channel .message', { hasText: 'Health gate failed' });
    await failed.waitFor({ timeout: 60_000 });
    const verdict = harness.slack
      .channelMessages(CHANNELS.production)
      .slice(gates)
      .find((m) => /Health gate/.test(m.text));
    expect(verdict?.text).toMatch(/Health gate failed/);
    expect(JSON.stringify(verdict?.blocks ?? [])).toContain('postgres');
    await expect.poll(() => failed.innerText()).toContain('postgres');

    await page.click('#break-clear');
    await expect.poll(() => page.locator('#estate [data-cluster="production"] .faults').innerText()).toBe('No fault set.');
    expect(harness.sim.faults.get('production')).toEqual({});
    await page.screenshot({ path: join(SCREENSHOTS, 'budget-stop.png') });
  }, 120_000);

  it("fills the upgrade's form in the page: the bot's error shows under its input, and the completed form plans the upgrade", async () => {
    await actAs(USERS.alice);
    await page.locator(`[data-nav-channel="${CHANNELS.staging}"]`).click();
    await page.fill('#command', '/talos upgrade talos');
    await page.press('#command', 'Enter');
    const form = page.locator('#modal form[data-view-id]');
    await form.locator('select[name="version"]').waitFor({ timeout: 30_000 });
    await form.locator('select[name="version"]').selectOption('v1.12.11');
    const review = form.locator('input[type="checkbox"][name="review"]');
    const items = await review.count();
    expect(items).toBeGreaterThan(1);
    for (let i = 0; i < items - 1; i += 1) await review.nth(i).check();
    await form.locator('button[type="submit"]').click();
    await expect.poll(() => form.locator('[data-block-id="review"] .error').count(), { timeout: 30_000 }).toBe(1);
    // The redraw with the bot's error keeps what was chosen.
    await expect.poll(() => form.locator('select[name="version"]').inputValue()).toBe('v1.12.11');

    await review.nth(items - 1).check();
    await form.locator('button[type="submit"]').click();
    await expect.poll(() => page.locator('#modal').isHidden(), { timeout: 30_000 }).toBe(true);
    const plan = page
      .locator('#channel .message', { hasText: 'v1.12.11' })
      .filter({ has: page.locator('button[data-action-id="talos-op-start"]') });
    await plan.waitFor({ timeout: 60_000 });
    expect(demo.harness.slack.modals(USERS.alice).at(-1)?.open).toBe(false);
  }, 120_000);
});
