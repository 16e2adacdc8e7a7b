import type { ChatMessage } from '../port/chat-port.ts';
import { mentionUser, section } from './blocks.ts';

/** The read-only reports a command can ask for from another cluster's channel. */
export type ReportKind = 'health gate' | 'readiness report' | 'Terraform plan';

/** The channel, and the link when there is one: `<#C…>: <url|label>`. */
function channelAndLink(channel: string, link: string | undefined, label: string): string {
  return link === undefined ? `<#${channel}>` : `<#${channel}>: <${link}|${label}>`;
}

/**
 * To the requester only, in the channel the command came from: the report went to its own
 * cluster's channel, so nothing of that cluster shows where it was asked. Names the cluster and
 * links to the report; Slack opens the link only for members of that channel.
 */
export function reportPointerMessage(kind: ReportKind, cluster: string, channel: string, link: string | undefined): ChatMessage {
  const text = `📍 The ${kind} of *${cluster}* you asked for is posted in its cluster's channel ${channelAndLink(channel, link, 'open it')}.`;
  return { text, blocks: [section(text)] };
}

/** To a second requester while a health gate of the cluster runs: no second gate, and where the running one reports. */
export function joinedGateMessage(cluster: string, channel: string, running: { requestedBy: string; link?: string }): ChatMessage {
  const text =
    `⏳ A health gate of *${cluster}* was already running (asked by ${mentionUser(running.requestedBy)}), so no second one was started. ` +
    `Its verdict appears in ${channelAndLink(channel, running.link, 'the running gate')}.`;
  return { text, blocks: [section(text)] };
}
