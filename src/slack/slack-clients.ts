import { WebClient } from '@slack/web-api';
import type { ChatPort } from '../port/chat-port.ts';
import type { Config } from '../config/env.ts';
import type { SecretScrubber } from '../log/secret-scrubber.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Clock } from '../time/clock.ts';
import { createSlackChat, onSlackRateLimited, SLACK_RETRY } from './slack-chat.ts';

/** The Web API client (authorization lookups) and the chat port the jobs talk through. */
export function createSlackClients(
  slack: Config['slack'],
  scrubber: SecretScrubber,
  metrics: Pick<Metrics, 'slackRateLimited' | 'slackApiErrors'>,
  clock: Pick<Clock, 'sleep'>,
): { client: WebClient; chat: ChatPort } {
  // Every call is bounded: an answer that never comes is a lost answer, not a job hung on Slack.
  const base = { ...(slack.apiUrl === undefined ? {} : { slackApiUrl: slack.apiUrl }), timeout: slack.timeoutMs };
  const client = new WebClient(slack.botToken, { ...base, retryConfig: SLACK_RETRY });
  // Posts must not be repeated blindly: Slack may have written one before failing. The chat port
  // sends them through this client, and looks for them before sending again.
  const onceClient = new WebClient(slack.botToken, { ...base, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });
  for (const c of [client, onceClient]) onSlackRateLimited(c, (method) => metrics.slackRateLimited.inc({ method }));
  const chat = createSlackChat(client, scrubber, {
    onError: (method, error) => metrics.slackApiErrors.inc({ method, error }),
    onceClient,
    uploadTimeoutMs: Math.max(30_000, slack.timeoutMs),
    // The waits between sends (backoff, a 429's Retry-After) run on the bot's clock.
    writeOnce: { clock },
  });
  return { client, chat };
}
