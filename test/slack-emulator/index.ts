export { BOT_ID, BOT_USER_ID } from './config.ts';
export { SlackEmulator, startSlackEmulator, type UserMessageInput } from './emulator.ts';
export type { CallFilter, DelayFault, Faults, HeldCalls, HoldFault, LostAnswerFault, RateLimitFault, ServerErrorFault } from './faults.ts';
export { slackSignature, type SigningOptions } from './http-delivery.ts';
export type { ButtonClickInput, HomeClickInput, SlashCommandInput, ViewClickInput, ViewInput, ViewSubmitOptions } from './payloads.ts';
export type { DisconnectReason } from './socket-mode.ts';
export type { OutageKind, OutageOptions, SocketOutage } from './socket-outage.ts';
export type { EventOptions, ViewSubmitResult } from './user-actions.ts';
export type { ModalEnd, OpenedModal, PublishedView } from './view-store.ts';
export type { WaitForOptions } from './wait-for.ts';
export type {
  AckRecord,
  AckTimeout,
  ApiCall,
  DeliveryResult,
  EmulatorChannel,
  EmulatorOptions,
  EmulatorUser,
  EmulatorUsergroup,
  Ephemeral,
  HttpDeliveryResult,
  JsonObject,
  Message,
  MessageMetadata,
  MessageVersion,
  Outstanding,
  ResponseUrlCall,
  SocketFrame,
  UploadedFile,
} from './types.ts';
