/** A JSON object as it travels on the wire. */
export type JsonObject = Record<string, unknown>;

export interface EmulatorUser {
  id: string;
  /** The handle (users.info's legacy `name`). */
  name: string;
  /** The full name (`real_name`); the handle when not given. */
  realName?: string;
  /** The display name the person chose; Slack answers `""` for someone who set none. */
  displayName?: string;
}

export interface EmulatorChannel {
  id: string;
  name: string;
  /** A private channel (ids starting with `G` are private too): the bot sees it only as a member. */
  isPrivate?: boolean;
  /** Whether the bot user is in the channel. Default true; false answers as Slack does for an uninvited bot. */
  botMember?: boolean;
  /** The people in the channel (`conversations.members` lists them, and the bot when it is in). Default: every known user. */
  members?: string[];
}

export interface EmulatorUsergroup {
  id: string;
  /** The group's handle (`@sre-approvers` is `sre-approvers`), served by `usergroups.list`. Default: the id lower-cased. */
  handle?: string;
  users: string[];
}

export interface EmulatorOptions {
  /** Bot token accepted by every Web API method except `apps.connections.open`. Default `xoxb-test-token`. */
  botToken?: string;
  /** App-level token, accepted only by `apps.connections.open`. Default `xapp-test-token`. */
  appToken?: string;
  /** Secret used to sign HTTP-mode deliveries. Default `test-signing-secret`. */
  signingSecret?: string;
  /** Default `T0TEST`. */
  teamId?: string;
  /** Workspace subdomain sent as `team_domain`. Default `talos-test`. */
  teamDomain?: string;
  /** Sent as `api_app_id` and in the `hello` frame. Default `A0TEST`. */
  appId?: string;
  /** Display name of the bot user `U0BOT` in payloads and transcripts. Default `talos`. */
  botName?: string;
  /**
   * Known channels. When given, any other channel gets `channel_not_found`;
   * when omitted, every channel id is accepted and named after itself.
   */
  channels?: EmulatorChannel[];
  /** Known users. When given, other user ids get `user_not_found` from `users.info`. */
  users?: EmulatorUser[];
  /** Groups served by `usergroups.users.list`. */
  usergroups?: EmulatorUsergroup[];
  /** Listening port on 127.0.0.1. Default 0 (ephemeral). */
  port?: number;
  /** How long a Socket Mode envelope waits for its ack, in ms. Default 3000 (Slack's rule). */
  ackTimeoutMs?: number;
  /** How long a `trigger_id` can open a modal after its interaction, in ms. Default 3000 (Slack's rule). */
  triggerTtlMs?: number;
  /**
   * Bot scopes the installation was granted; a method needing another answers `missing_scope`.
   * Default: the bot scopes of `manifests/slack-app.yaml`.
   */
  scopes?: string[];
  /** Whether the app has a Home tab (`views.publish` answers `not_enabled` otherwise). Default: the manifest's `features.app_home`. */
  homeTabEnabled?: boolean;
  /** Bot events the app subscribes to. Default: the manifest's `settings.event_subscriptions.bot_events`. */
  botEvents?: string[];
}

export interface MessageMetadata {
  event_type: string;
  event_payload: JsonObject;
}

export interface MessageFile {
  id: string;
  name: string;
  title: string;
}

/** A stored channel message in the shape `conversations.history` returns it. */
export interface Message {
  type: 'message';
  channel: string;
  ts: string;
  text: string;
  /** Set on replies, and on a parent once it has replies (equal to its own `ts`), as Slack does. */
  thread_ts?: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  app_id?: string;
  team?: string;
  blocks?: JsonObject[];
  attachments?: JsonObject[];
  metadata?: MessageMetadata;
  files?: MessageFile[];
  edited?: { user: string; ts: string };
  reply_count?: number;
  reply_users?: string[];
  reply_users_count?: number;
  latest_reply?: string;
}

/** The content of a message after one `chat.update` (or `replace_original`). */
export interface MessageVersion {
  text: string;
  blocks?: JsonObject[];
  attachments?: JsonObject[];
  metadata?: MessageMetadata;
  /** The `edited.ts` stamped by this change; absent on the original version. */
  editedAt?: string;
  source: 'post' | 'chat.update' | 'response_url';
}

export type EphemeralSource = 'chat.postEphemeral' | 'ack' | 'response_url';

export interface Ephemeral {
  channel: string;
  user: string;
  text: string;
  blocks?: JsonObject[];
  thread_ts?: string;
  message_ts: string;
  source: EphemeralSource;
  at: number;
}

export interface UploadedFile {
  id: string;
  filename: string;
  title: string;
  /** The uploaded bytes decoded as UTF-8. */
  content: string;
  bytes: Buffer;
  channel?: string;
  thread_ts?: string;
  initial_comment?: string;
}

export interface ApiCall {
  method: string;
  args: JsonObject;
  status: number;
  at: number;
  /** `ok` and `error` of the JSON reply; absent for non-JSON replies (5xx faults). */
  ok?: boolean;
  error?: string;
  rawBody: string;
}

export type EnvelopeType = 'slash_commands' | 'interactive' | 'events_api';

export interface AckRecord {
  envelopeId: string;
  type: EnvelopeType;
  payload: JsonObject;
  ackedInMs: number;
  transport: 'socket' | 'http';
  /** True when the ack arrived after the ack timeout; Slack ignores such acks. */
  late: boolean;
}

export type AckTimeoutReason = 'no_ack' | 'no_connection' | 'closed';

export interface AckTimeout {
  envelopeId: string;
  type: EnvelopeType;
  reason: AckTimeoutReason;
  at: number;
}

export type DeliveryResult =
  | { timedOut: false; envelopeId: string; payload: JsonObject; ackedInMs: number; connectionId: number }
  | { timedOut: true; envelopeId: string; reason: AckTimeoutReason };

export interface SocketFrame {
  connectionId: number;
  direction: 'in' | 'out';
  data: string;
  at: number;
}

export interface ResponseUrlCall {
  id: string;
  body: JsonObject;
  status: number;
  at: number;
}

/** What the emulator is still waiting for from the bot, for tests that wait until it has settled. */
export interface Outstanding {
  /** Slash commands, clicks and events delivered (Socket Mode or HTTP) and not yet acked or timed out. */
  deliveries: number;
  /** Requests of the bot to the emulator (Web API, uploads, response URLs) not yet answered. */
  requests: number;
  /** Slash commands acked empty whose reply has not yet come through their response_url. */
  replies: number;
}

export interface HttpDeliveryResult {
  status: number;
  body: string;
}
