import type { GateSignOffStore } from '../../../src/ops/gate-signoffs.ts';
import { GateSignOff, SIGN_OFF_EVIDENCE_MAX, signOffLapse } from '../../../src/rules/gate-signoff.ts';
import { plainTime } from '../../../src/time/plain-time.ts';

/** An approver's [Sign off] of a gate of a `/talos gates` report, and the evidence the modal asked for. */
export interface SignOffClick {
  cluster: string;
  gate: string;
  /** The report the button came with. */
  gatesJob: string;
  user: string;
}

export type SignOffResult =
  { ok: true; reply: string } | { ok: false; code: 'stale' | 'already' | 'bad-input' | 'redis-lost'; message: string };

export interface SignOffDeps {
  signOffs: GateSignOffStore;
  /** How long a sign-off counts, in ms. */
  signOffMaxAgeMs: number;
  now: () => Date;
}

function refusedSignOff(code: 'stale' | 'already' | 'bad-input', message: string): SignOffResult {
  return { ok: false, code, message };
}

/**
 * Whether the click may still sign off: its report is the cluster's latest, the gate waited for a
 * person in it, and no sign-off that still counts is recorded for it. Undefined when it may.
 */
export async function signOffRefusal(deps: SignOffDeps, click: SignOffClick): Promise<SignOffResult | undefined> {
  const report = await deps.signOffs.latestReport(click.cluster);
  if (report === undefined || report.job !== click.gatesJob)
    return refusedSignOff(
      'stale',
      `That [Sign off] is from an older \`/talos gates\` report of *${click.cluster}*. Run \`/talos gates ${click.cluster}\` again and sign off from the new report. Nothing changed.`,
    );
  if (!report.byHand.includes(click.gate))
    return refusedSignOff(
      'stale',
      `The gate \`${click.gate}\` does not wait for a person in the latest report of *${click.cluster}*. Nothing changed.`,
    );
  const existing = (await deps.signOffs.list(click.cluster)).given.find((s) => s.gate === click.gate);
  if (existing !== undefined && signOffLapse(existing, report.shape, deps.now(), deps.signOffMaxAgeMs) === undefined)
    return refusedSignOff(
      'already',
      `<@${existing.by}> already signed off \`${click.gate}\` on *${click.cluster}* ${plainTime(existing.at)}, and it still counts. Run \`/talos gates ${click.cluster}\` to see the verdict. Nothing changed.`,
    );
  return undefined;
}

/**
 * The one place a person's sign-off of a gate is recorded: for the shape of the report it was
 * given on, with the evidence, after the same checks as the click. A repeated or concurrent
 * sign-off finds the first one and changes nothing.
 */
export async function signOffGate(deps: SignOffDeps, click: SignOffClick, evidence: string | undefined): Promise<SignOffResult> {
  const text = (evidence ?? '').trim();
  if (text === '')
    return refusedSignOff(
      'bad-input',
      'A sign-off needs evidence: paste a link or write a note that shows the gate holds. Nothing changed.',
    );
  if (text.length > SIGN_OFF_EVIDENCE_MAX)
    return refusedSignOff(
      'bad-input',
      `The evidence is ${text.length} characters; keep it to ${SIGN_OFF_EVIDENCE_MAX}, or link to a longer document. Nothing changed.`,
    );
  const refusal = await signOffRefusal(deps, click);
  if (refusal !== undefined) return refusal;
  const report = (await deps.signOffs.latestReport(click.cluster))!;
  const expected = await deps.signOffs.raw(click.cluster, click.gate);
  const at = deps.now();
  const signOff = GateSignOff.parse({
    cluster: click.cluster,
    gate: click.gate,
    by: click.user,
    at: at.toISOString(),
    evidence: text,
    shape: report.shape,
  });
  if (!(await deps.signOffs.record(signOff, expected, deps.signOffMaxAgeMs)))
    return refusedSignOff('already', `Someone signed off \`${click.gate}\` on *${click.cluster}* a moment ago. Nothing changed.`);
  const until = plainTime(new Date(at.getTime() + deps.signOffMaxAgeMs));
  return {
    ok: true,
    reply: `🖊️ You signed off \`${click.gate}\` on *${click.cluster}*. It counts until ${until}, or until the cluster's nodes change. Run \`/talos gates ${click.cluster}\` for the verdict.`,
  };
}
