/**
 * The embedded demo: a private redis-server, the simulated staging and production
 * clusters, the local Slack emulator, and the real bot as a child process. It sends
 * the commands an operator would and prints what the channel shows.
 */
import { productionShape, stagingShape } from '../sim/index.ts';
import { REVIEW_ITEMS } from '../../jobs/playbooks/talos-upgrade/texts.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import {
  approve,
  approveUntilDone,
  clickStart,
  opIdOf,
  originalButtonValue,
  type Plan,
  requestUpgrade,
  tickAll,
  waitForApprovalRequest,
  waitForRootState,
} from '../support/upgrade-flow.ts';
import { runWebDemo } from './web/web-demo.ts';

const out = (text = ''): void => {
  process.stdout.write(`${text}\n`);
};

function banner(title: string): void {
  out();
  out('═'.repeat(100));
  out(`  ${title}`);
  out('═'.repeat(100));
}

/** Slack shows every time in its reader's own zone; the transcript is read from Berlin. */
const READER_ZONE = 'Europe/Berlin';

/** The part of the channel's transcript posted since `since` top-level messages. */
function transcriptSince(h: Harness, channel: string, since: number): string {
  const all = h.slack.transcript(channel, { timeZone: READER_ZONE }).split('\n');
  const heads = all.map((line, i) => (/^ {2}\[\d\d:\d\d:\d\d\]/.test(line) ? i : -1)).filter((i) => i >= 0);
  const start = heads[since] ?? all.length;
  return all.slice(start).join('\n');
}

async function healthGate(h: Harness, title: string): Promise<void> {
  banner(title);
  const since = h.slack.channelMessages(CHANNELS.production).length;
  const ack = await h.command('health');
  out(`> /talos health   (as @alice)\n  ephemeral: ${ack}`);
  await h.slack.waitFor(
    () => {
      const root = h.slack.channelMessages(CHANNELS.production)[since];
      // The evidence file comes last: the one-line reply and each unwell check's reply are in before it.
      return (
        root &&
        /Health gate (passed|failed)/.test(root.text) &&
        h.slack.thread(CHANNELS.production, root.ts).some((m) => (m.files ?? []).length > 0)
      );
    },
    { timeoutMs: 60_000 },
  );
  out(transcriptSince(h, CHANNELS.production, since));
}

/** `/talos plan` in a cluster's channel; an approver clicks Apply on the plan, and the change runs to its end. */
async function terraformChange(h: Harness, channel: string, title: string, apply: boolean): Promise<void> {
  banner(title);
  const since = h.slack.channelMessages(channel).length;
  const plan = await requestUpgrade(h, 'plan', { channel });
  out(`> /talos plan   (as @alice)\n  ephemeral: ${plan.ack}`);
  const planned = await h.slack.waitFor(() => h.slack.message(channel, plan.root.ts), { description: 'the plan' });
  if (apply && /waiting for an approver's Apply/.test(planned.text)) {
    // A plan that boots the ISO (a moved talos_version, a new VM) carries a checkbox: the approver compares the sha256 first.
    const ticks = tickAll(h, channel, plan.root.ts);
    const iso = Object.keys(ticks).length > 0 ? ', after ticking "the ISO at isos:iso/talos-nocloud-amd64.iso matches this sha256",' : '';
    out(`  @carol (an approver, paged in the thread) reviews the plan and clicks [Apply]${iso}`);
    await h.slack.clickButton({ user: USERS.carol, channel, messageTs: plan.root.ts, actionId: 'talos-op-start', ticks });
    await h.slack.waitFor(() => /completed|stopped|cancelled/.test(h.slack.message(channel, plan.root.ts)?.text ?? '') || undefined, {
      timeoutMs: 90_000,
      description: 'the end of the change',
    });
  }
  out(transcriptSince(h, channel, since));
}

/** `/talos upgrade talos` without a version in staging: the modal as @alice sees it, an incomplete review, then the plan. */
async function upgradeThroughModal(h: Harness, version: string): Promise<Plan> {
  const channel = CHANNELS.staging;
  await h.slack.sendSlashCommand({ user: USERS.alice, channel, text: 'upgrade talos' });
  const modal = await h.slack.waitFor(
    () => h.slack.modals(USERS.alice).find((m) => m.open && JSON.stringify(m.view.blocks).includes('"block_id":"version"')),
    { timeoutMs: 20_000, description: 'the upgrade modal with its releases' },
  );
  out('> /talos upgrade talos   (as @alice, in #maint-staging): a form opens');
  out(h.slack.renderModal(modal.viewId).replace(/^/gm, '  '));
  const review = [...REVIEW_ITEMS];
  const partial = await h.slack.submitView(USERS.alice, modal.viewId, { version, review: review.slice(0, 4) });
  out(`  @alice picks ${version}, ticks four of five review items and clicks [Plan the upgrade]: the form stays open`);
  out(`  ⚠ ${partial.errors.review ?? JSON.stringify(partial.errors)}`);
  const repliesBefore = h.slack.ephemerals(channel, USERS.alice).length;
  await h.slack.submitView(USERS.alice, modal.viewId, { review });
  out('  @alice ticks the last item and submits: the form closes and the command runs as typed');
  const reply = await h.slack.waitFor(() => h.slack.ephemerals(channel, USERS.alice).slice(repliesBefore)[0], {
    timeoutMs: 20_000,
    description: "the command's reply",
  });
  const opId = opIdOf(reply.text);
  const root = await h.slack.waitFor(
    () => h.slack.channelMessages(channel).find((m) => m.text.includes(opId) && /planned|refused/.test(m.text)),
    { timeoutMs: 30_000, description: `the plan of ${opId}` },
  );
  out(`  ephemeral: ${h.slack.readable(reply.text)}`);
  return { opId, root, ack: reply.text };
}

/**
 * A stopped production upgrade: the stop as it was posted (what happened, the nodes and etcd, the one
 * action it recommends, who may click), then @alice's Retry once the cause is gone, and the approvals to the end.
 */
async function stopAndRetry(h: Harness, plan: Plan): Promise<void> {
  const stop = h.slack.thread(CHANNELS.production, plan.root.ts).findLast((m) => m.text.includes('❌ Stopped'));
  if (stop === undefined) return;
  out('\n  The upgrade stopped at talos-prd-cp-2 (the registry refused its installer image once). The stop as it was posted:');
  out(h.slack.render(CHANNELS.production, stop.ts, { version: 0, timeZone: READER_ZONE }).replace(/^/gm, '    '));
  h.sim.faults.clear('production', 'upgradeError');
  out('  The registry answers again; @alice clicks the recommended [Retry talos-prd-cp-2] and confirms; @carol approves the node again');
  await h.slack.clickButton({
    user: USERS.alice,
    channel: CHANNELS.production,
    messageTs: stop.ts,
    actionId: 'talos-op-retry',
    value: originalButtonValue(h, CHANNELS.production, stop.ts, 'talos-op-retry'),
  });
  await h.slack.waitFor(() => !/stopped at the first failure/.test(h.slack.message(CHANNELS.production, plan.root.ts)?.text ?? ''), {
    description: 'the upgrade running again',
  });
  await approveUntilDone(h, plan, CHANNELS.production, USERS.carol);
}

async function main(): Promise<void> {
  out(
    'Starting redis-server, the simulated clusters (staging: 1 control plane + 1 worker; production: 3 control planes with Longhorn and a three-instance CloudNativePG database, apps/db), the Slack emulator and the bot…',
  );
  out(
    `Times in the transcripts are shown as a reader in ${READER_ZONE} sees them; "(also sent to channel)" marks a thread reply Slack also shows in the channel.`,
  );
  // Production runs a CloudNativePG database, as the runbook's production gates expect: its primary
  // budget allows no disruption, and the gate judges it by CloudNativePG's switchover.
  const clusters = [
    stagingShape(),
    productionShape({ cnpg: [{ name: 'db', namespace: 'apps', instances: 3, podAntiAffinityType: 'required' }] }),
  ];
  const h = await startHarness({ timing: { rebootMs: 400 }, clusters, inventory: { withoutNodeLists: true } });
  try {
    banner('/talos help');
    out(await h.command('help'));

    banner('Refusals change nothing');
    for (const [text, channel] of [
      ['health qa', CHANNELS.production],
      ['health', CHANNELS.random],
      ['upgrade talos v1.12.11;id', CHANNELS.production],
    ] as const) {
      out(`> /talos ${text}   (in ${channel})\n  ephemeral: ${await h.command(text, { channel })}`);
    }

    await healthGate(
      h,
      "/talos health — the healthy production cluster: Longhorn (its instance-manager budgets at 0, judged by Longhorn's drain policy), Cilium, Flux",
    );

    h.sim.faults.set('production', { pdbBlocked: ['postgres'] });
    await healthGate(
      h,
      "/talos health — production with a workload's PodDisruptionBudget at 0 (apps/postgres): the drain of its nodes would block",
    );
    h.sim.faults.clear('production');

    h.sim.faults.set('production', { fluxStalled: ['apps'] });
    await healthGate(h, '/talos health — production with a stalled Flux Kustomization (flux-system/apps)');
    h.sim.faults.clear('production');

    // One reviewed commit changes a Talos patch in both clusters' inputs.
    await h.sim.terraform.changePatch('staging');
    await h.sim.terraform.changePatch('production');
    await h.sim.terraform.commit('Talos patch: kubelet log rotation in staging and production');
    await terraformChange(
      h,
      CHANNELS.staging,
      "/talos plan in staging — a routine Terraform change: plan, an approver's Apply of exactly that plan, the health gate",
      true,
    );
    await terraformChange(
      h,
      CHANNELS.production,
      '/talos plan in production — the same commit promoted: it was applied to staging and passed its gate',
      true,
    );

    banner('/talos upgrade talos in staging first, through its form — the worker without approval, then the control plane after one');
    const stagingSince = h.slack.channelMessages(CHANNELS.staging).length;
    const rehearsal = await upgradeThroughModal(h, 'v1.12.11');
    await clickStart(h, rehearsal, USERS.alice, CHANNELS.staging);
    await approveUntilDone(h, rehearsal, CHANNELS.staging, USERS.carol);
    out(transcriptSince(h, CHANNELS.staging, stagingSince));

    banner('/talos upgrade talos v1.12.11 — a full production upgrade with an approval before each control plane');
    const since = h.slack.channelMessages(CHANNELS.production).length;
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11');
    out(`> /talos upgrade talos v1.12.11   (as @alice)\n  ephemeral: ${plan.ack}`);
    out(
      '  @alice clicks [Start]; @carol (paged with the approvers) clicks [Approve] on each control-plane request as it appears, and confirms its dialog',
    );
    // The registry refuses talos-prd-cp-2's installer image once: the upgrade stops there, and its Retry finishes it.
    h.sim.faults.set('production', { upgradeError: { '10.0.30.12': 'error validating installer image: unauthorized' } });
    await clickStart(h, plan, USERS.alice);
    await approveUntilDone(h, plan, CHANNELS.production, USERS.carol);
    await stopAndRetry(h, plan);
    out(transcriptSince(h, CHANNELS.production, since));
    const firstRequest = h.slack
      .thread(CHANNELS.production, plan.root.ts)
      .find((m) => m.text.includes('talos-prd-cp-1') && m.text.includes('Approved'));
    if (firstRequest) {
      out(
        '\n  The first approval request as it was posted, before @carol approved it: the question first, the approvers paged, the dialog Approve opens:',
      );
      out(h.slack.render(CHANNELS.production, firstRequest.ts, { version: 0, timeZone: READER_ZONE }).replace(/^/gm, '    '));
      const notification = h.slack.versions(CHANNELS.production, firstRequest.ts)[0]?.text.split('\n')[0] ?? '';
      out(`  Its notification, which pages @carol and the S0SRE group: ${h.slack.readable(notification, { timeZone: READER_ZONE })}`);
    }

    // The root as a live status board, as it read while a control plane was on its way.
    const boardVersions = h.slack.versions(CHANNELS.production, plan.root.ts);
    const nowOf = (i: number): string => /Now:\*[^"]*/.exec(JSON.stringify(boardVersions[i]?.blocks ?? []))?.[0] ?? '';
    const onCp2 = boardVersions.map((_, i) => i).filter((i) => nowOf(i).includes('talos-prd-cp-2'));
    const board = onCp2.find((i) => nowOf(i).includes('reboot')) ?? onCp2.at(-1) ?? -1;
    if (board >= 0) {
      out('\n  The root message while talos-prd-cp-2 was upgraded: a live status board, edited at each phase:');
      out(h.slack.render(CHANNELS.production, plan.root.ts, { version: board, timeZone: READER_ZONE }).replace(/^/gm, '    '));
    }

    // The runbook's Terraform follow-up of the upgrade: talos_version moves to what every node now runs.
    await h.sim.terraform.setTalosVersion('staging', 'v1.12.11');
    await h.sim.terraform.setTalosVersion('production', 'v1.12.11');
    await h.sim.terraform.commit('talos_version: v1.12.11 in staging and production');
    await terraformChange(
      h,
      CHANNELS.staging,
      "/talos plan in staging — the Talos upgrade's Terraform follow-up, applied in staging first",
      true,
    );
    await terraformChange(
      h,
      CHANNELS.production,
      '/talos plan in production — the same follow-up promoted, labelled as such, applied once every node runs the declared version',
      true,
    );

    banner(
      '/talos replace talos-prd-cp-2 — a failed control plane replaced: member removed, Node deleted, a reviewed VM replacement applied',
    );
    h.sim.failMachine('production', 'talos-prd-cp-2');
    out('  (talos-prd-cp-2 lost power: talosctl gets no route to it, its Node is Unknown, its etcd member stays listed)');
    const replaceSince = h.slack.channelMessages(CHANNELS.production).length;
    const replacement = await requestUpgrade(h, 'replace talos-prd-cp-2');
    out(`> /talos replace talos-prd-cp-2   (as @alice)\n  ephemeral: ${replacement.ack}`);
    out('  @alice clicks [Start]; @carol approves the removal of its etcd member, then the apply of the reviewed plan');
    await clickStart(h, replacement, USERS.alice);
    await approveUntilDone(h, replacement, CHANNELS.production, USERS.carol);
    out(transcriptSince(h, CHANNELS.production, replaceSince));

    banner('/talos rehearse etcd-restore — refused in production, whatever it says');
    out(`> /talos rehearse etcd-restore   (in #maint-production)\n  ephemeral: ${await h.command('rehearse etcd-restore')}`);

    banner(
      '/talos rehearse etcd-restore in staging — a verified snapshot, the control plane wiped after two approvers, one bootstrap --recover-from',
    );
    const restoreSince = h.slack.channelMessages(CHANNELS.staging).length;
    const restore = await requestUpgrade(h, 'rehearse etcd-restore', { channel: CHANNELS.staging });
    out(`> /talos rehearse etcd-restore   (as @alice, in #maint-staging)\n  ephemeral: ${restore.ack}`);
    out('  @alice clicks [Start]; @carol approves the resets, then @dave (a second, distinct approver)');
    await clickStart(h, restore, USERS.alice, CHANNELS.staging);
    const resets = await waitForApprovalRequest(h, restore, CHANNELS.staging, 60_000);
    await approve(h, resets, USERS.carol, CHANNELS.staging);
    await h.slack.waitFor(() => /1 of 2/.test(JSON.stringify(h.slack.message(CHANNELS.staging, resets.ts)?.blocks ?? [])), {
      description: 'the first of two approvals',
    });
    await approve(h, resets, USERS.dave, CHANNELS.staging);
    await waitForRootState(h, restore, /completed|stopped|cancelled/, CHANNELS.staging, 180_000);
    out(transcriptSince(h, CHANNELS.staging, restoreSince));

    banner('/talos gates production — the staging rehearsals, ticked from the records');
    const gatesSince = h.slack.channelMessages(CHANNELS.production).length;
    out(`> /talos gates production   (as @alice)\n  ephemeral: ${await h.command('gates production')}`);
    const rehearsals = await h.slack.waitFor(
      () => {
        const report = h.slack.channelMessages(CHANNELS.production).slice(gatesSince)[0];
        return report === undefined
          ? undefined
          : h.slack.thread(CHANNELS.production, report.ts).find((m) => /Staging rehearsals/.test(m.text));
      },
      { timeoutMs: 60_000, description: 'the staging rehearsals gate' },
    );
    const shown = ((rehearsals.blocks ?? []) as { text?: { text?: string } }[]).map((b) => b.text?.text ?? '').join('\n');
    out(h.slack.readable(shown, { timeZone: READER_ZONE }).replace(/^/gm, '  '));

    banner('/talos status');
    out(h.slack.readable(await h.command('status'), { timeZone: READER_ZONE }));
    out();
    out(
      `Every node now runs ${h.sim
        .cluster('production')
        .nodes.map((n) => `${n.hostname}=${n.talosVersion}`)
        .join(', ')}.`,
    );
  } finally {
    await h.stop();
  }
}

// `npm run demo -- --web`: the same estate and bot, driven from a browser (test/demo/web).
if (process.argv.includes('--web')) await runWebDemo();
else await main();
