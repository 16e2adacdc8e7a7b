/**
 * The bot token scopes the app manifest (manifests/slack-app.yaml) asks for, each with what breaks
 * without it; `/talos doctor` compares them with the scopes Slack granted. A test keeps the two lists equal,
 * and the scope table of docs/deploy.md is written from this one (`npm run docs:scopes`).
 */
export const REQUIRED_BOT_SCOPES: Readonly<Record<string, string>> = {
  commands: 'the /talos command',
  'chat:write': 'every message and reply: plans, status messages, the audit thread, ephemeral refusals',
  'channels:history': 'finding its own replies again in public channels, so a reply whose answer was lost is not posted twice',
  'groups:history': 'finding its own replies again in private channels',
  'files:write': 'the maintenance record and the evidence attached to a thread',
  'usergroups:read': 'operators and approvers named as user groups (S… or @handle): their members',
  'channels:read': 'channel membership in public channels (Home tab, doctor), and #channel names in the inventory',
  'groups:read': 'channel membership in private channels the bot is in, and their #channel names',
  'users:read':
    'display names on approval cards (who asked, who started) and in the exported maintenance records, and @handle names in the inventory',
};
