/** Who is in a Slack channel; the Slack adapter implements it. */
export interface ChannelMembers {
  /**
   * Whether `user` is a member of `channel`. Throws when Slack cannot say (an error, a missing
   * scope, a private channel the bot is not in): the caller then treats the user as no member.
   */
  isMember(channel: string, user: string): Promise<boolean>;
}
