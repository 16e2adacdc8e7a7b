import { runDoctor } from '../../jobs/doctor/doctor.ts';
import { doctorStartMessage, type DoctorFinding } from '../chat/doctor-report.ts';
import { createSlackSelf } from '../slack/slack-self.ts';
import { REQUIRED_BOT_SCOPES } from '../slack/required-scopes.ts';
import type { Adapters } from './adapters.ts';
import type { Infrastructure } from './infrastructure.ts';

/** Bound of each doctor check: one tofu output, one Kubernetes list, a few Slack calls. */
const CHECK_TIMEOUT_MS = 20_000;

/** `/talos doctor`'s checks, bound to this process's clients. */
export function buildDoctor(infra: Infrastructure, adapters: Adapters): () => Promise<DoctorFinding[]> {
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
      checkTimeoutMs: Math.min(CHECK_TIMEOUT_MS, Math.max(config.timeouts.probeMs, 5000)),
    });
}

/**
 * With `DOCTOR_CHANNEL` set, the doctor runs once after the start and posts its report there.
 * It never holds up the start: a failure is logged, and `/talos doctor` runs the same checks.
 */
export function postDoctorAtStart(infra: Infrastructure, adapters: Adapters, doctor: () => Promise<DoctorFinding[]>): Promise<void> {
  const channel = infra.config.doctorChannel;
  if (channel === undefined) return Promise.resolve();
  const { logger } = infra;
  return doctor()
    .then(async (findings) => {
      const counts = { fail: 0, warn: 0, ok: 0 };
      for (const f of findings) counts[f.status]++;
      logger.info(
        {
          ...counts,
          failed: findings.filter((f) => f.status === 'fail').map((f) => (f.cluster === undefined ? f.check : `${f.check} · ${f.cluster}`)),
        },
        'doctor at start',
      );
      await adapters.chat.post(channel, doctorStartMessage(findings));
    })
    .catch((error: unknown) =>
      logger.warn({ err: infra.scrubber.scrub((error as Error).message ?? String(error)) }, 'doctor at start could not report'),
    );
}
