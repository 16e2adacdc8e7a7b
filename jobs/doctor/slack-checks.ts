import type { DoctorFinding } from '../../src/chat/doctor-report.ts';
import { errorText } from '../../src/chat/error-text.ts';
import type { SlackSelf } from '../../src/port/slack-self.ts';
import type { ResolvedName } from '../../src/config/inventory-names.ts';
import type { DoctorDeps } from './doctor.ts';

type Identity = () => ReturnType<SlackSelf['identity']>;

/** Slack's error code of a failed call (`channel_not_found`, `missing_scope`), else its message. */
function slackCode(error: unknown): string {
  const code = (error as { data?: { error?: unknown } } | undefined)?.data?.error;
  return typeof code === 'string' ? code : errorText(error);
}

/** The granted scopes (`auth.test`'s `x-oauth-scopes`) against the manifest's list. */
export async function scopesCheck(deps: Pick<DoctorDeps, 'requiredScopes'>, self: Identity): Promise<DoctorFinding[]> {
  const granted = new Set((await self()).scopes);
  const missing = Object.keys(deps.requiredScopes).filter((scope) => !granted.has(scope));
  if (missing.length === 0) {
    return [
      {
        status: 'ok',
        check: 'Slack scopes',
        found: `all ${Object.keys(deps.requiredScopes).length} scopes of the app manifest are granted`,
      },
    ];
  }
  const what = missing.map((scope) => `\`${scope}\` (${deps.requiredScopes[scope]})`).join(', ');
  return [
    {
      status: 'fail',
      check: 'Slack scopes',
      found: `the bot token lacks ${what}`,
      fix: 'add the missing scopes from manifests/slack-app.yaml to the app (OAuth & Permissions) and reinstall it to the workspace',
    },
  ];
}

/** The bot is in every cluster's channel: it posts, edits and reads its replies there. */
export async function membershipChecks(deps: Pick<DoctorDeps, 'inventory' | 'slack'>, self: Identity): Promise<DoctorFinding[]> {
  const { userId, name: botName } = await self();
  // The name Slack knows the bot by: the manifest's display name, or whatever the workspace renamed it to.
  const handle = botName === '' ? 'talos' : botName;
  const channels = [...new Map(deps.inventory.clusters.map((c) => [c.channel, c.name])).entries()];
  return Promise.all(
    channels.map(async ([channel, name]): Promise<DoctorFinding> => {
      const base = { check: 'Channel membership', cluster: name };
      const invite = `invite the bot with \`/invite @${handle}\` in <#${channel}>`;
      try {
        if (await deps.slack.isMember(channel, userId)) return { ...base, status: 'ok', found: `the bot is in <#${channel}>` };
        return { ...base, status: 'fail', found: `the bot is not in <#${channel}>, so it cannot post there`, fix: invite };
      } catch (error) {
        const code = slackCode(error);
        if (code === 'channel_not_found' || code === 'not_in_channel') {
          // Slack answers so for a private channel the bot is not in (and for one that does not exist).
          return {
            ...base,
            status: 'fail',
            found: `Slack shows the bot no channel ${channel} (${code}): a private channel it is not in, or a wrong id`,
            fix: `${invite}, or correct the cluster's \`channel\` in the inventory`,
          };
        }
        if (code === 'missing_scope') {
          return {
            ...base,
            status: 'fail',
            found: `membership of <#${channel}> cannot be read (missing_scope)`,
            fix: 'grant `channels:read` (public channels) and `groups:read` (private ones) and reinstall the app',
          };
        }
        return {
          ...base,
          status: 'fail',
          found: `membership of <#${channel}> cannot be read (${code})`,
          fix: "run `/talos doctor` again; if it persists, check Slack's status",
        };
      }
    }),
  );
}

/**
 * What the inventory's `#channel` and `@handle` names stand for, as Slack resolved them: the ids a
 * person compares with the channel's details or a profile. Nothing when the inventory gives ids only.
 */
export function namesCheck(names: readonly ResolvedName[]): DoctorFinding[] {
  if (names.length === 0) return [];
  const lines = names.map((n) => `\`${n.name}\` → \`${n.id}\`${n.kind === 'channel' ? '' : ` (${n.kind})`}`);
  return [{ status: 'ok', check: 'Inventory names', found: `resolved through Slack: ${lines.join(', ')}` }];
}
