import type { App, SlashCommand } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import type { Playbook, PlaybookCommand } from '../jobs/engine/playbook.ts';
import { PLAYBOOKS } from '../jobs/playbooks/index.ts';
import {
  type GuidedForm,
  NODE_MODAL,
  nodePickerModal,
  readSubmission,
  unticked,
  UPGRADE_MODAL,
  upgradeModal,
  type VersionChoices,
  type VersionForm,
  offeredTalosVersions,
  INPUT,
  type RunningNow,
} from '../src/chat/guided-modals.ts';
import { findStagingRehearsal } from '../src/ops/rehearsal.ts';
import { nextTalosTargets } from '../src/rules/next-talos-targets.ts';
import { allNodes, resolveCluster, type ClusterConfig } from '../src/config/inventory.ts';
import { supportTable, type SupportTable } from '../src/talos/compatibility.ts';
import type { ImageFactory } from '../src/talos/image-factory.ts';
import type { CommandDeps, Outcome } from './commands/command-context.ts';

/** What the guided commands need beyond a command's: Image Factory's release list, for the version select. */
export interface GuidedDeps extends CommandDeps {
  factory?: Pick<ImageFactory, 'versions'>;
}

/** Runs a typed command's text as if `slack.user_id` had typed it in `slack.channel_id`; the same path as `/talos`. */
export type RunTyped = (text: string, slack: SlashCommand) => Promise<Outcome>;

/** The clusters this user may act on: those whose operators include them. */
export async function actableClusters(deps: CommandDeps, user: string): Promise<ClusterConfig[]> {
  const allowed = await Promise.all(deps.inventory.clusters.map((c) => deps.authorizer.isMember(user, c.operators)));
  return deps.inventory.clusters.filter((_, i) => allowed[i]);
}

/** The playbooks by kind, as the registry holds them: the guided forms are built from it. */
export type PlaybookRegistry = Readonly<Record<string, Playbook>>;

/** A command's guided form, as its playbook declares it: a node picker for a node, a version form for a version. */
export type Guided =
  { argument: 'node'; command: PlaybookCommand; form: GuidedForm } | { argument: 'version'; command: PlaybookCommand; form: VersionForm };

/** The guided form of the command named `kind`, from its playbook's declaration; undefined when it has none. */
export function guidedForm(kind: string, playbooks: PlaybookRegistry = PLAYBOOKS): Guided | undefined {
  const playbook = Object.values(playbooks).find((p) => p.command.name === kind);
  if (playbook === undefined) return undefined;
  const { command } = playbook;
  const { form, argument } = command;
  if (form === undefined || argument.kind === 'none') return undefined;
  const typed = `/talos ${command.words.join(' ')} ${argument.kind.toUpperCase()}`;
  const base = { kind, title: form.title, submit: form.submit };
  if (argument.kind === 'node') return { argument: 'node', command, form: { ...base, typed } };
  return {
    argument: 'version',
    command,
    form: {
      ...base,
      typed: `${typed} CLUSTER`,
      releases: argument.releases,
      // The review is the playbook's own, the one its Start records.
      reviewItems: playbook.texts.reviewItems,
      ...(form.rehearsedItem === undefined ? {} : { rehearsedItem: form.rehearsedItem }),
    },
  };
}

/**
 * Opens the modal of a command typed without its version or node. Slack takes `views.open` only
 * within 3 s of the command, so the modal opens with what the bot knows locally; the release list
 * of Image Factory comes after, by `views.update`. Returns a reply when no modal opens.
 */
export async function openGuided(
  client: WebClient,
  triggerId: string,
  user: string,
  channel: string,
  kind: string,
  deps: GuidedDeps,
  playbooks: PlaybookRegistry = PLAYBOOKS,
): Promise<string | undefined> {
  const guided = guidedForm(kind, playbooks);
  if (guided === undefined) return `\`/talos ${kind}\` has no form: type the command in full (see \`/talos help\`). Nothing was started.`;
  const what = guided.command.request.what;
  const clusters = await actableClusters(deps, user);
  const here = resolveCluster(deps.inventory, channel, undefined);
  const channelCluster = here.ok ? here.cluster.name : undefined;
  if (guided.argument === 'node') {
    // The node is asked for in the channel's own cluster: naming a cluster is no way out of a channel of none.
    if (!deps.inventory.clusters.some((c) => c.channel === channel)) {
      const names = deps.inventory.clusters.map((c) => `${c.name} (<#${c.channel}>)`).join(', ');
      return `This channel belongs to no cluster. Use a maintenance channel: ${names}. Nothing was started.`;
    }
    if (!here.ok) return `${here.reason} Nothing was started.`;
    if (!clusters.some((c) => c.name === here.cluster.name)) {
      return `Only operators of *${here.cluster.name}* may start ${what}. Ask one of them, or have yourself added to \`operators\` in the inventory. Nothing was started.`;
    }
    // What the last look saw is read only when the inventory names no node: one Redis read, well within Slack's 3 s.
    const look = allNodes(here.cluster).length === 0 ? await deps.observedEstates?.read(here.cluster.name) : undefined;
    await client.views.open({ trigger_id: triggerId, view: nodePickerModal(guided.form, here.cluster, look, deps.now()) as never });
    return undefined;
  }
  if (clusters.length === 0) {
    return `Only a cluster's operators may start ${what}, and you are an operator of none. Ask one, or have yourself added to \`operators\` in the inventory. Nothing was started.`;
  }
  const { form } = guided;
  const needsVersions = form.releases === 'talos' && deps.factory !== undefined;
  const first: VersionChoices = needsVersions
    ? { state: 'loading' }
    : { state: 'unavailable', reason: 'The release list is not available' };
  const opened = await client.views.open({
    trigger_id: triggerId,
    view: upgradeModal({ form, clusters, channelCluster, versions: first }) as never,
  });
  if (!needsVersions || opened.view?.id === undefined) return undefined;
  let versions: VersionChoices;
  try {
    // The inventory's rows count: a minor it adds is offered, with its Kubernetes range.
    const support = supportTable(deps.inventory);
    const factoryVersions = await deps.factory!.versions();
    const offered = offeredTalosVersions(factoryVersions, support);
    const here = clusters.find((c) => c.name === channelCluster);
    const from = here === undefined ? undefined : await runningNow(deps, kind, here, offered, factoryVersions, support);
    versions =
      from === undefined
        ? { state: 'ready', versions: offered, support }
        : { state: 'ready', versions: from.allowed, support, from: from.running };
  } catch (error) {
    versions = { state: 'unavailable', reason: `Image Factory did not answer (${error instanceof Error ? error.message : String(error)})` };
  }
  await client.views.update({
    view_id: opened.view.id,
    ...(opened.view.hash === undefined ? {} : { hash: opened.view.hash }),
    view: upgradeModal({ form, clusters, channelCluster, versions }) as never,
  });
  return undefined;
}

/**
 * What the channel's cluster runs (its last gate's reading, the last look's node count) and the
 * targets the rules allow from it, the recommended one with its staging upgrade from the records.
 * Undefined when no gate read the versions yet: the form then offers every supported release.
 */
async function runningNow(
  deps: GuidedDeps,
  kind: string,
  cluster: ClusterConfig,
  offered: string[],
  factoryVersions: string[],
  support: SupportTable,
): Promise<{ running: RunningNow; allowed: string[] } | undefined> {
  const [kept, look] = await Promise.all([
    deps.signals?.read(cluster.name).catch(() => undefined),
    deps.observedEstates?.read(cluster.name).catch(() => undefined),
  ]);
  const versions = kept?.talosVersions;
  if (versions === undefined || versions.length === 0) return undefined;
  const nodes = look === undefined ? undefined : look.controlPlanes.length + look.workers.length;
  // From mixed versions no single path holds: every release is offered and the preflight judges it.
  const { allowed, refused } =
    versions.length === 1 ? nextTalosTargets(versions[0]!, offered, factoryVersions, support) : { allowed: offered, refused: [] };
  const recommended = versions.length === 1 ? allowed[0] : undefined;
  const rehearsal = recommended === undefined ? undefined : await findStagingRehearsal(deps, kind, recommended).catch(() => undefined);
  return {
    allowed,
    running: {
      cluster: cluster.name,
      versions,
      ...(nodes === undefined || nodes === 0 ? {} : { nodes }),
      refused,
      ...(recommended === undefined ? {} : { recommended }),
      ...(rehearsal === undefined ? {} : { rehearsal }),
    },
  };
}

/** The typed command a submitted modal stands for, or the errors to show under its inputs. */
export function typedCommand(
  view: {
    private_metadata?: string;
    state?: { values?: unknown };
  },
  playbooks: PlaybookRegistry = PLAYBOOKS,
): { text: string; cluster: string } | { errors: Record<string, string> } {
  const submission = readSubmission(view);
  const { kind, cluster } = submission;
  const guided = kind === undefined ? undefined : guidedForm(kind, playbooks);
  if (guided === undefined) return { errors: { [INPUT.cluster]: 'This form is not one the bot opened. Run the command again.' } };
  const words = guided.command.words.join(' ');
  if (guided.argument === 'node') {
    if (submission.node === undefined || cluster === undefined) return { errors: { [INPUT.node]: 'Choose a node.' } };
    return { text: `${words} ${submission.node} ${cluster}`, cluster };
  }
  const errors: Record<string, string> = {};
  const missing = unticked(guided.form.reviewItems, submission.reviewed);
  if (missing.length > 0) errors[INPUT.review] = `Tick every review item before planning; still open: ${missing.join('; ')}.`;
  if (submission.version === undefined) errors[INPUT.version] = 'Choose the target version.';
  if (cluster === undefined) errors[INPUT.cluster] = 'Choose the cluster.';
  if (Object.keys(errors).length > 0) return { errors };
  return { text: `${words} ${submission.version} ${cluster}`, cluster: cluster! };
}

/**
 * A guided modal's submission: the review must be complete (else the modal stays open with what
 * is missing), then the modal closes and its typed command runs as if typed in the cluster's
 * channel, with the same parsing, refusals and request, its reply shown there to the user alone.
 */
export function registerGuidedSubmissions(app: App, deps: CommandDeps, run: RunTyped): void {
  for (const callbackId of [UPGRADE_MODAL, NODE_MODAL]) {
    app.view({ callback_id: callbackId, type: 'view_submission' }, async ({ ack, body, view }) => {
      const log = deps.logger.child({ user: body.user.id, view: callbackId });
      const typed = typedCommand(view);
      if ('errors' in typed) {
        await ack({ response_action: 'errors', errors: typed.errors });
        return;
      }
      await ack();
      const cluster = deps.inventory.clusters.find((c) => c.name === typed.cluster);
      // A cluster the inventory does not name still runs the command, which refuses it; its reply goes to the user where they are.
      const channel = cluster?.channel ?? deps.inventory.clusters[0]?.channel ?? '';
      const slack = {
        user_id: body.user.id,
        user_name: body.user.name,
        channel_id: channel,
        trigger_id: `view-${view.id}`,
        text: typed.text,
        command: '/talos',
      } as SlashCommand;
      let reply: string;
      try {
        reply = (await run(typed.text, slack)).reply;
      } catch (error) {
        log.error({ err: error instanceof Error ? error.message : String(error) }, 'guided command failed');
        reply = 'The bot could not check that request: Slack or its Redis did not answer. Nothing was started; try again in a minute.';
      }
      await deps.chat.ephemeral(channel, body.user.id, { text: reply }).catch((error: unknown) => {
        log.warn({ err: error instanceof Error ? error.message : String(error) }, 'guided command reply not delivered');
      });
    });
  }
}
