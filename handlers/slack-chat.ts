import type { WebClient } from '@slack/web-api';
import type { ChatMessage, ChatPort } from '../src/chat/chat-port.ts';
import type { SecretScrubber } from '../src/log/secret-scrubber.ts';

/** Everything that leaves for Slack passes the scrubber first: a secret in a tool's output never reaches a channel. */
function clean(scrubber: SecretScrubber, message: ChatMessage): { text: string; blocks?: ChatMessage['blocks'] } {
  const text = scrubber.scrub(message.text);
  if (message.blocks === undefined) return { text };
  return { text, blocks: JSON.parse(scrubber.scrub(JSON.stringify(message.blocks))) as ChatMessage['blocks'] };
}

function tsOf(response: { ts?: string }): string {
  if (response.ts === undefined) throw new Error('Slack returned no message ts');
  return response.ts;
}

/** The chat port on Slack's Web API. */
export function createSlackChat(client: WebClient, scrubber: SecretScrubber): ChatPort {
  return {
    async post(channel, message) {
      const response = await client.chat.postMessage({ channel, ...clean(scrubber, message) } as Parameters<WebClient['chat']['postMessage']>[0]);
      return { ts: tsOf(response) };
    },
    async reply(channel, threadTs, message) {
      const response = await client.chat.postMessage({ channel, thread_ts: threadTs, ...clean(scrubber, message) } as Parameters<WebClient['chat']['postMessage']>[0]);
      return { ts: tsOf(response) };
    },
    async update(channel, ts, message) {
      await client.chat.update({ channel, ts, ...clean(scrubber, message) } as Parameters<WebClient['chat']['update']>[0]);
    },
    async ephemeral(channel, user, message) {
      await client.chat.postEphemeral({ channel, user, ...clean(scrubber, message) } as Parameters<WebClient['chat']['postEphemeral']>[0]);
    },
    async upload(channel, threadTs, file) {
      await client.filesUploadV2({
        channel_id: channel,
        thread_ts: threadTs,
        filename: file.filename,
        title: file.title,
        content: scrubber.scrub(file.content),
      });
    },
  };
}
