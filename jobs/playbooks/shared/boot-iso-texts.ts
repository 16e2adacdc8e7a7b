import { escapeMrkdwn, section } from '../../../src/chat/blocks.ts';
import type { StartConfirmation } from '../../../src/chat/presentation.ts';
import type { TerraformPlan } from '../../../src/ops/operation.ts';
import type { Block } from '../../../src/port/chat-port.ts';
import { ISO_TICK_TEXT, isoTickValue } from './boot-iso.ts';

/** The boot ISO the plan relies on: its URL and the full sha256 a person compares with the uploaded file, never shortened. */
export function isoBlocks(iso: TerraformPlan['iso'], verb = 'Apply'): Block[] {
  if (iso === undefined) return [];
  const head = `*Boot ISO* (the plan relies on it: ${escapeMrkdwn(iso.because)})`;
  if (iso.sha256 === undefined)
    return [section(`${head}\n${escapeMrkdwn(iso.url)}\n⚠️ No sha256: ${escapeMrkdwn(iso.error ?? 'the download failed')}`)];
  const size = iso.bytes === undefined ? '' : ` (${iso.bytes} bytes, downloaded by the bot)`;
  return [
    section(
      `${head}\n${escapeMrkdwn(iso.url)}\nsha256${size}:\n\`${iso.sha256}\`\nBefore ${verb}, compare it with the sha256 of \`${iso.file}\` on the Proxmox storage, and tick the box below.`,
    ),
  ];
}

/** The tick for a plan's boot ISO, bound to its full sha256; none while the plan relies on no ISO or has no sha256. */
export function isoConfirmationsOf(iso: TerraformPlan['iso']): StartConfirmation[] {
  if (iso?.sha256 === undefined) return [];
  return [
    {
      value: isoTickValue(iso.sha256),
      text: ISO_TICK_TEXT,
      record: `the ISO at ${iso.file} matches sha256 ${iso.sha256} (${iso.url})`,
    },
  ];
}
