import type { WebClient } from '@slack/web-api';
import type { SlackSelf } from '../port/slack-self.ts';
import { createChannelMembers } from './slack-channel-members.ts';

export function createSlackSelf(client: WebClient): SlackSelf {
  // Never cached: the doctor is asked after someone invited the bot, and must see it at once.
  const members = createChannelMembers(client, { cacheMs: 0 });
  return {
    async identity() {
      const answer = await client.auth.test();
      // The Web API client copies the `x-oauth-scopes` header into `response_metadata.scopes`.
      return { userId: answer.user_id ?? '', name: answer.user ?? '', scopes: answer.response_metadata?.scopes ?? [] };
    },
    isMember: (channel, userId) => members.isMember(channel, userId),
  };
}
