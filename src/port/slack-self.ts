/** What the bot can learn about itself in Slack, for the doctor's checks; the Slack adapter implements it. */
export interface SlackSelf {
  /**
   * `auth.test`: the bot's user id, its user name (the app manifest's `bot_user.display_name`, what
   * `/invite @…` takes) and the scopes its token was granted (Slack's `x-oauth-scopes` header).
   */
  identity(): Promise<{ userId: string; name: string; scopes: readonly string[] }>;
  /**
   * Whether `userId` is a member of `channel` (`conversations.members`: channels:read for a public
   * channel, groups:read for a private one). Throws with Slack's error code when Slack cannot say,
   * such as `channel_not_found` for a private channel the bot is not in.
   */
  isMember(channel: string, userId: string): Promise<boolean>;
}
