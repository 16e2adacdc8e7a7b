import { WebClient } from '@slack/web-api';
import type { ChatPort } from '../chat/chat-port.ts';
import type { Config } from '../config/env.ts';
import type { SecretScrubber } from '../log/secret-scrubber.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { createSlackChat, onSlackRateLimited, SLACK_RETRY } from './slack-chat.ts';

/** The Web API client (authorization lookups) and the chat port the jobs talk through. */
export function createSlackClients(slack: Config['slack'], scrubber: SecretScrubber, metrics: Pick<Metrics, 'slackRateLimited' | 'slackApiErrors'>): { client: WebClient; chat: ChatPort } {
  const base = slack.apiUrl === undefined ? {} : { slackApiUrl: slack.apiUrl };
  const client = new WebClient(slack.botToken, { ...base, retryConfig: SLACK_RETRY });
  onSlackRateLimited(client, (method) => metrics.slackRateLimited.inc({ method }));
  // Audit replies must not be repeated blindly: Slack may have posted one before failing. The audit retries, looking at the thread first.
  const onceClient = new WebClient(slack.botToken, { ...base, retryConfig: { retries: 0 } });
  const chat = createSlackChat(client, scrubber, { onError: (method, error) => metrics.slackApiErrors.inc({ method, error }), onceClient });
  return { client, chat };
}
