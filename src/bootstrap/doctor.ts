import { runDoctor } from '../../jobs/doctor/doctor.ts';
import { doctorStartMessage, type DoctorFinding } from '../chat/doctor-report.ts';
import { createSlackSelf } from '../slack/slack-self.ts';
import { REQUIRED_BOT_SCOPES } from '../slack/required-scopes.ts';
import type { Logger } from '../log/logger.ts';
import type { SecretScrubber } from '../log/secret-scrubber.ts';
import type { ChatPort } from '../port/chat-port.ts';
import type { Adapters } from './adapters.ts';
import type { Infrastructure } from './infrastructure.ts';
import type { InventoryNames } from './inventory-names.ts';

/** Bound of each doctor check: one tofu output, one Kubernetes list, a few Slack calls. */
const CHECK_TIMEOUT_MS = 20_000;

/** `/talos doctor`'s checks, bound to this process's clients. */
export function buildDoctor(infra: Infrastructure, adapters: Adapters, names: InventoryNames): () => Promise<DoctorFinding[]> {
  const { config, inventory, scrubber, redis, clock } = infra;
  return () =>
    runDoctor({
      inventory,
      slack: createSlackSelf(adapters.slackClient),
      requiredScopes: REQUIRED_BOT_SCOPES,
      tofu: adapters.tofu,
      scrubber,
      access: adapters.access,
      binaries: adapters.talosctl.local,
      downloader: adapters.talosctl.downloader,
      redis: { url: config.redisUrl, client: redis },
      now: () => clock.now(),
      clock,
      checkTimeoutMs: Math.min(CHECK_TIMEOUT_MS, Math.max(config.timeouts.probeMs, 5000)),
      placement: config.placement,
      names: () => names.current,
    });
}

/** What the start-up report needs: where it goes (`DOCTOR_CHANNEL`), the chat and the log. */
export interface DoctorAtStart {
  channel: string | undefined;
  chat: Pick<ChatPort, 'post'>;
  logger: Logger;
  scrubber: SecretScrubber;
}

/**
 * With `DOCTOR_CHANNEL` set, the doctor runs once after the start and posts its report there.
 * It never holds up the start: a failure is logged, and `/talos doctor` runs the same checks.
 */
export async function postDoctorAtStart(deps: DoctorAtStart, doctor: () => Promise<DoctorFinding[]>): Promise<void> {
  const { channel, logger } = deps;
  if (channel === undefined) return;
  try {
    const findings = await doctor();
    const counts = { fail: 0, warn: 0, ok: 0 };
    for (const f of findings) counts[f.status]++;
    // Which checks failed, by name only: the lines themselves are for Slack.
    const failed = findings
      .filter((f) => f.status === 'fail')
      .map((f) => (f.cluster === undefined ? f.check : `${f.check} · ${f.cluster}`));
    logger.info({ ...counts, failed }, 'doctor at start');
    await deps.chat.post(channel, doctorStartMessage(findings));
  } catch (error) {
    logger.warn({ err: deps.scrubber.scrub(error instanceof Error ? error.message : String(error)) }, 'doctor at start could not report');
  }
}
