import type { Operation } from '../../../src/ops/operation.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import type { IsoChecksum } from '../../../src/talos/image-factory.ts';
import { section } from '../../../src/chat/blocks.ts';
import { shortHashes } from '../../../src/chat/short-hashes.ts';

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
export function terraformFollowUp(
  op: Operation,
  input: { schematic: string; platform: string; isos: FollowUpIso[]; declaration?: string },
): ChatMessage {
  const v = op.target.version ?? '?';
  const { platform, schematic } = input;
  const isoLines = input.isos.map(({ arch, url, checksum }) =>
    checksum.ok
      ? // The whole hash, as a line `sha256sum -c` checks where the file is: nobody compares hashes by eye.
        `   • ${arch}: <${url}|${platform}-${arch}.iso> (${checksum.bytes} bytes, as Image Factory served it to the bot)\n     \`echo '${checksum.sha256}  talos-${platform}-${arch}.iso' | sha256sum -c\``
      : `   • ${arch}: <${url}|${platform}-${arch}.iso>\n     the checksum could not be computed (${checksum.reason}): compute it from the download yourself`,
  );
  const files = input.isos.map(({ arch }) => `\`isos:iso/talos-${platform}-${arch}.iso\``).join(', ');
  const lines = [
    `*Terraform follow-up* (runbook, after every node runs ${v}):`,
    `1. ${input.declaration ?? `Set \`talos_version = "${v}"\` in the ${op.cluster} inventory`}.`,
    `2. The matching ISO of schematic \`${shortHashes(schematic)}\`, for the nodes' architecture:`,
    ...isoLines,
    `3. Upload it to the static Proxmox file ID every node declares (${files}), then run the line above in that storage's \`iso\` directory on the Proxmox host: it must print \`OK\`.`,
    `4. Commit it and run \`/talos plan\`: the bot offers it only if it declares exactly ${v}, which every node runs, and refuses one that replaces \`talos_machine_secrets\` or any VM.`,
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}
