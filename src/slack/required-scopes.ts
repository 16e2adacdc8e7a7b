/**
 * The bot token scopes the app manifest (manifests/slack-app.yaml) asks for, each with what breaks
 * without it; `/talos doctor` compares them with the scopes Slack granted. A test keeps the two lists equal.
 */
export const REQUIRED_BOT_SCOPES: Readonly<Record<string, string>> = {
  commands: 'the /talos command',
  'chat:write': 'every message and reply',
  'channels:history': 'finding its own replies again in public channels',
  'groups:history': 'finding its own replies again in private channels',
  'files:write': 'the maintenance record file',
  'usergroups:read': 'operators and approvers named as user groups',
  'channels:read': 'channel membership in public channels (Home tab, doctor)',
  'groups:read': 'channel membership in private channels (Home tab, doctor)',
  'users:read': 'display names of the people in the exported maintenance records',
};
