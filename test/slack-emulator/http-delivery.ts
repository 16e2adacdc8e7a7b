import { createHmac } from 'node:crypto';
import type { HttpDeliveryResult } from './types.ts';

/** Knobs for negative tests of a Bolt HTTP receiver's request verification. */
export interface SigningOptions {
  /** Sign with a wrong secret, so the signature does not verify. */
  forgeSignature?: boolean;
  /** Send a timestamp ten minutes old (Bolt rejects anything older than five). */
  staleTimestamp?: boolean;
  /** Exact `x-slack-request-timestamp` to send, in epoch seconds; overrides `staleTimestamp`. */
  requestTimestampSec?: number;
}

/** `v0=<hex HMAC-SHA256(secret, "v0:<timestamp>:<body>")>`, as Slack signs requests. */
export function slackSignature(secret: string, timestampSec: number, body: string): string {
  const digest = createHmac('sha256', secret).update(`v0:${timestampSec}:${body}`).digest('hex');
  return `v0=${digest}`;
}

/** Posts `body` signed as Slack signs it; `headers` add to or replace the defaults (a form body). */
export async function postSigned(
  url: string,
  body: string,
  secret: string,
  opts: SigningOptions,
  headers: Record<string, string> = {},
): Promise<HttpDeliveryResult> {
  const now = Math.floor(Date.now() / 1000);
  const timestamp = opts.requestTimestampSec ?? (opts.staleTimestamp === true ? now - 600 : now);
  const signingSecret = opts.forgeSignature === true ? `${secret}-forged` : secret;
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': slackSignature(signingSecret, timestamp, body),
      ...headers,
    },
    body,
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, body: await response.text() };
}
