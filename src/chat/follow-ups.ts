import type { Operation } from '../ops/operation.ts';
import type { IsoChecksum } from '../talos/image-factory.ts';
import type { ChatMessage } from './chat-port.ts';
import { escapeMrkdwn, mentionUser, section } from './blocks.ts';

/**
 * A completed operation's follow-up, addressed to the operator who started it: the Terraform
 * steps it lists are theirs to do, so Slack notifies them.
 */
export function toOperator(op: Operation, followUp: ChatMessage): ChatMessage {
  const operator = mentionUser(op.startedBy ?? op.requestedBy);
  const [first, ...rest] = followUp.blocks ?? [section(escapeMrkdwn(followUp.text))];
  const text = first?.['text'] as { type?: string; text?: string } | undefined;
  const addressed = first?.['type'] === 'section' && typeof text?.text === 'string' ? [{ ...first, text: { ...text, text: `${operator} ${text.text}` } }] : [section(operator), ...(first ? [first] : [])];
  return { text: `${operator} ${followUp.text}`, blocks: [...addressed, ...rest] };
}

/** One ISO the Terraform follow-up names: its URL, the nodes' architecture, and what its checksum came to. */
export interface FollowUpIso {
  arch: string;
  url: string;
  checksum: IsoChecksum;
}

/**
 * The runbook's Terraform follow-up of a Talos upgrade: the version to declare, the ISO of the
 * schematic for the nodes' architecture with the sha256 of what Image Factory served (or why it
 * could not be computed), the static Proxmox file to compare it with, and the plan's red lines.
 */
export function terraformFollowUp(op: Operation, input: { schematic: string; platform: string; isos: FollowUpIso[] }): ChatMessage {
  const v = op.target.version ?? '?';
  const { platform, schematic } = input;
  const isoLines = input.isos.map(({ arch, url, checksum }) =>
    checksum.ok
      ? `   • ${arch}: ${url}\n     sha256 \`${checksum.sha256}\` (${checksum.bytes} bytes, as Image Factory served it to the bot)`
      : `   • ${arch}: ${url}\n     the checksum could not be computed (${checksum.reason}): compute it from the download yourself`,
  );
  const files = input.isos.map(({ arch }) => `\`isos:iso/talos-${platform}-${arch}.iso\``).join(', ');
  const lines = [
    `*Terraform follow-up* (runbook, after every node runs ${v}):`,
    `1. Set \`talos_version = "${v}"\` in the ${op.cluster} inventory.`,
    `2. The matching ISO of schematic \`${schematic}\`, for the nodes' architecture:`,
    ...isoLines,
    `3. Upload it to the static Proxmox file ID every node declares (${files}) and confirm the sha256 of the file there is the one above.`,
    '4. Run `tofu plan`: if it replaces `talos_machine_secrets` or any VM, do not continue. Apply only now that every node runs the declared version.',
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}

export function k8sTerraformFollowUp(op: Operation): ChatMessage {
  const v = op.target.version ?? '?';
  const lines = [
    `*Terraform follow-up* (runbook, now that every node reports ${v}):`,
    `1. Set \`talos_kubernetes_version = "v${v}"\` in the ${op.cluster} inventory — with the leading v (the CLI took \`${v}\` without it).`,
    '2. Run `tofu plan` and check it for accidental downgrades: no Kubernetes component may go back to an older version.',
    '3. Apply it to remove the drift.',
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}

export function rollbackFollowUp(op: Operation, node: string, version: string, others: string[]): ChatMessage {
  const lines = [
    `↩️ *${node} was rolled back:* it now runs ${version} (ran ${op.target.fromVersion ?? '?'}) and is Ready.`,
    ...(others.length > 0 ? [`Other nodes: ${others.join('; ')}.`] : []),
    '• Investigate the failure before trying the upgrade again.',
    '• Do not move the Terraform `talos_version` declaration until the incident is resolved. If you already changed it, revert that change before the next apply.',
  ];
  return { text: lines.join('\n'), blocks: [section(escapeMrkdwn(lines.join('\n')))] };
}

export function removalFollowUp(op: Operation, node: string, role: 'control plane' | 'worker'): ChatMessage {
  const lines = [
    `*Next (runbook):* ${node} is reset and out of the cluster; Terraform still declares it.`,
    `1. Remove the ${role} entry for ${node} from the ${op.cluster} \`talos_nodes\` inventory.`,
    '2. Run `tofu plan`: it must destroy only that VM. If it replaces `talos_machine_secrets` or any other VM, stop.',
    '3. Apply Terraform.',
    `4. Remove ${node} from \`${role === 'worker' ? 'workers' : 'controlPlanes'}\` in this bot's cluster inventory, or every health gate will look for it.`,
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}
