import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiDeps } from './api-context.ts';
import { type EmulatorConfig, resolveConfig } from './config.ts';
import { Directory } from './directory.ts';
import { Faults } from './faults.ts';
import { FileStore } from './file-store.ts';
import type { SigningOptions } from './http-delivery.ts';
import { MessageStore } from './message-store.ts';
import type { ButtonClickInput, HomeClickInput, SlashCommandInput, ViewClickInput, ViewInput, ViewSubmitOptions } from './payloads.ts';
import { Recorder } from './recorder.ts';
import { ResponseUrls } from './response-url.ts';
import { type DisconnectReason, SocketModeHub } from './socket-mode.ts';
import type { OutageOptions, SocketOutage } from './socket-outage.ts';
import { renderModal, renderOne, renderText, renderTranscript, type TranscriptOptions } from './transcript.ts';
import { TsClock } from './ts-clock.ts';
import type {
  AckRecord,
  AckTimeout,
  ApiCall,
  DeliveryResult,
  EmulatorOptions,
  Ephemeral,
  HttpDeliveryResult,
  JsonObject,
  Message,
  MessageVersion,
  Outstanding,
  ResponseUrlCall,
  SocketFrame,
  UploadedFile,
} from './types.ts';
import { handleUpload } from './uploads.ts';
import { type EventOptions, UserActions, type ViewSubmitResult } from './user-actions.ts';
import { type Polled, waitFor, type WaitForOptions } from './wait-for.ts';
import { WebApi } from './web-api.ts';
import { homeOpenedEvent, ModalStore, type OpenedModal, type PublishedView, TriggerStore, ViewStore } from './view-store.ts';

export interface UserMessageInput {
  user: string;
  channel: string;
  text: string;
  thread_ts?: string;
}

/** A local Slack: Web API, Socket Mode, response URLs and uploads on one HTTP server. */
export class SlackEmulator {
  /** Fault injection for Web API calls. */
  readonly faults = new Faults();
  readonly #config: EmulatorConfig;
  readonly #server: Server;
  readonly #recorder = new Recorder();
  readonly #directory: Directory;
  readonly #messages = new MessageStore(new TsClock());
  readonly #files = new FileStore();
  readonly #views = new ViewStore();
  readonly #modals = new ModalStore();
  readonly #triggers = new TriggerStore();
  readonly #hub: SocketModeHub;
  readonly #responses: ResponseUrls;
  readonly #webApi: WebApi;
  readonly #actions: UserActions;
  /** Requests of the bot (Web API, uploads, response URLs) not answered yet. */
  #requestsInFlight = 0;
  #closed: Promise<void> | undefined;

  constructor(opts: EmulatorOptions = {}) {
    this.#config = resolveConfig(opts);
    this.#directory = new Directory(this.#config);
    this.#hub = new SocketModeHub(this.#config, this.#recorder);
    this.#responses = new ResponseUrls(this.#config, this.#messages, this.#recorder);
    const origin = (): string => this.origin;
    const deps: ApiDeps = {
      config: this.#config,
      directory: this.#directory,
      messages: this.#messages,
      files: this.#files,
      views: this.#views,
      modals: this.#modals,
      triggers: this.#triggers,
      origin,
      openSocketUrl: () => this.#hub.issueUrl(this.origin),
    };
    this.#webApi = new WebApi(deps, this.#recorder, this.faults, () => this.#hub.outage);
    this.#actions = new UserActions({ ...deps, hub: this.#hub, responses: this.#responses, recorder: this.#recorder });
    this.#server = createServer((req, res) => {
      this.#requestsInFlight += 1;
      res.once('close', () => {
        this.#requestsInFlight -= 1;
      });
      this.#route(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`emulator error: ${error instanceof Error ? error.message : String(error)}`);
      });
    });
    this.#server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => this.#hub.handleUpgrade(req, socket, head));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#config.port, '127.0.0.1', () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
  }

  /** `http://127.0.0.1:<port>` */
  get origin(): string {
    const address = this.#server.address() as AddressInfo | null;
    if (address === null) throw new Error('The Slack emulator is not listening; use startSlackEmulator()');
    return `http://127.0.0.1:${address.port}`;
  }

  /** Base URL for `clientOptions.slackApiUrl` / `SLACK_API_URL`. */
  get apiUrl(): string {
    return `${this.origin}/api/`;
  }

  get botToken(): string {
    return this.#config.botToken;
  }

  get appToken(): string {
    return this.#config.appToken;
  }

  get signingSecret(): string {
    return this.#config.signingSecret;
  }

  // Recording

  get apiCalls(): ApiCall[] {
    return this.#recorder.apiCalls;
  }

  get acks(): AckRecord[] {
    return this.#recorder.acks;
  }

  get ackTimeouts(): AckTimeout[] {
    return this.#recorder.ackTimeouts;
  }

  get socketFrames(): SocketFrame[] {
    return this.#recorder.socketFrames;
  }

  get responseUrlCalls(): ResponseUrlCall[] {
    return this.#recorder.responseUrlCalls;
  }

  /** Raw bodies of every Web API request, in arrival order. */
  rawBodies(): string[] {
    return this.#recorder.apiCalls.map((c) => c.rawBody);
  }

  /** Everything the bot sent: request bodies (API, uploads, response URLs), socket frames, HTTP ack bodies. */
  allTraffic(): string {
    return this.#recorder.allTraffic();
  }

  callsTo(method: string): ApiCall[] {
    return this.#recorder.apiCalls.filter((c) => c.method === method);
  }

  // Store readers

  /** Messages shown in the channel itself (not thread replies, except broadcasts), oldest first. */
  channelMessages(channel: string): Message[] {
    return this.#messages.topLevel(channel);
  }

  /** Replies of the thread under `ts`, oldest first, without the parent. */
  thread(channel: string, ts: string): Message[] {
    return this.#messages.replies(channel, ts);
  }

  message(channel: string, ts: string): Message | undefined {
    return this.#messages.get(channel, ts);
  }

  /** One entry per edit (`chat.update` or `replace_original`), oldest first; the original post is not included. */
  edits(channel: string, ts: string): MessageVersion[] {
    return this.#messages.versions(channel, ts).slice(1);
  }

  /** Every version of a message, the original post first. */
  versions(channel: string, ts: string): MessageVersion[] {
    return this.#messages.versions(channel, ts);
  }

  ephemerals(channel?: string, user?: string): Ephemeral[] {
    return this.#messages.ephemerals(channel, user);
  }

  uploadedFiles(): UploadedFile[] {
    return this.#files.completed();
  }

  /** The user's Home tab as the bot last published it (`views.publish`), if ever. */
  homeView(user: string): JsonObject | undefined {
    return this.#views.home(user);
  }

  /** Every Home tab publish Slack accepted, oldest first; only `user`'s when given. */
  publishedViews(user?: string): PublishedView[] {
    return this.#views.published(user);
  }

  /** Every modal the bot opened (`views.open`), oldest first, open or not; only `user`'s when given. */
  modals(user?: string): OpenedModal[] {
    return this.#modals.list(user);
  }

  /** The modal `user` has open now (the last opened), if any. */
  openModal(user: string): OpenedModal | undefined {
    return this.#modals.list(user).findLast((m) => m.open);
  }

  /** A modal as the user sees it: title, inputs, buttons; `version` 0 is the view as opened (default: now). */
  renderModal(viewId: string, options: { version?: number } = {}): string {
    const modal = this.#modals.get(viewId);
    if (modal === undefined) throw new Error(`renderModal: no modal ${viewId}`);
    const view = options.version === undefined ? modal.view : modal.versions[options.version];
    if (view === undefined) throw new Error(`renderModal: modal ${viewId} has no version ${options.version}`);
    return renderModal(view, options.version === undefined ? modal.errors.at(-1) : undefined)
      .map((line) => renderText(line, this.#directory))
      .join('\n');
  }

  // The installation

  /** Bot scopes the token holds now (by default the manifest's). */
  get scopes(): string[] {
    return [...this.#config.scopes];
  }

  /** Replaces the token's bot scopes, as reinstalling the app with another manifest would. */
  setScopes(scopes: string[]): void {
    this.#config.scopes.clear();
    for (const scope of scopes) this.#config.scopes.add(scope);
  }

  /** Someone runs `/invite @bot` in the channel (`true`) or removes the bot from it (`false`). */
  setBotMember(channel: string, member: boolean): void {
    this.#directory.setBotMember(channel, member);
  }

  /** Sets the people in a channel (the bot's own membership is `setBotMember`'s), as joins and leaves would. */
  setChannelMembers(channel: string, users: readonly string[]): void {
    this.#directory.setChannelMembers(channel, users);
  }

  /** The channel as a reader sees it; `options.timeZone` is the reader's zone for date tokens. */
  transcript(channel: string, options?: TranscriptOptions): string {
    return renderTranscript(channel, this.#messages, this.#directory, options);
  }

  /** One message as a reader sees it, as the transcript shows it; `version` 0 is the message as first posted (default: now). */
  render(channel: string, ts: string, options: TranscriptOptions & { version?: number } = {}): string {
    const message = this.#messages.get(channel, ts);
    if (message === undefined) throw new Error(`render: no message ${ts} in ${channel}`);
    const version = options.version === undefined ? undefined : this.#messages.versions(channel, ts)[options.version];
    const shown = version === undefined ? message : { ...message, text: version.text, blocks: version.blocks, edited: undefined };
    return renderOne(shown, this.#directory, options);
  }

  /** Slack markup in a text (a command's reply, say) as a reader sees it: mentions, channels, dates, links. */
  readable(text: string, options?: TranscriptOptions): string {
    return renderText(text, this.#directory, options);
  }

  /** Seeds a message written by a person (no event is delivered). */
  postUserMessage(input: UserMessageInput): Message {
    const channel = this.#directory.resolveChannel(input.channel);
    if (channel === undefined) throw new Error(`postUserMessage: unknown channel ${input.channel}`);
    return this.#messages.post(channel, { text: input.text, user: input.user, team: this.#config.teamId, thread_ts: input.thread_ts });
  }

  waitFor<T>(fn: () => Polled<T> | Promise<Polled<T>>, opts?: WaitForOptions): Promise<T> {
    return waitFor(fn, opts);
  }

  /** What the bot still owes: acks of deliveries, its own requests in flight, replies of commands acked empty. */
  outstanding(): Outstanding {
    return { deliveries: this.#actions.unackedDeliveries(), requests: this.#requestsInFlight, replies: this.#actions.unansweredCommands() };
  }

  // Socket Mode

  connectionCount(): number {
    return this.#hub.connectionCount();
  }

  waitForConnections(n: number, timeoutMs?: number): Promise<void> {
    return this.#hub.waitForConnections(n, timeoutMs);
  }

  disconnectAll(reason?: DisconnectReason): void {
    this.#hub.disconnectAll(reason);
  }

  dropAllConnections(): void {
    this.#hub.dropAllConnections();
  }

  dropNextAcks(n: number): void {
    this.#hub.dropNextAcks(n);
  }

  /**
   * Socket Mode unreachable for a while: the open sockets are cut, and `apps.connections.open`
   * fails (HTTP 503, or no answer) and no WebSocket opens until the outage ends. The rest of
   * the Web API keeps answering; `faults` covers that.
   */
  socketOutage(options?: OutageOptions): SocketOutage {
    return this.#hub.startOutage(options);
  }

  // What users do

  sendSlashCommand(input: SlashCommandInput): Promise<DeliveryResult> {
    return this.#actions.sendSlashCommand(input);
  }

  clickButton(input: ButtonClickInput): Promise<DeliveryResult> {
    return this.#actions.clickButton(input);
  }

  sendEvent(event: JsonObject, opts?: EventOptions): Promise<DeliveryResult> {
    return this.#actions.sendEvent(event, opts);
  }

  /**
   * The user enters `values` (by block_id: a text, an option's value, the values ticked) in their open modal and
   * submits it; the result says what they see next (closed, the bot's errors, Slack's required-field refusal).
   */
  submitView(user: string, viewId: string, values?: ViewInput, opts?: ViewSubmitOptions): Promise<ViewSubmitResult> {
    return this.#actions.submitView(user, viewId, values, opts);
  }

  /** The user closes their modal; `view_closed` reaches the bot only if the view set `notify_on_close`. */
  closeView(user: string, viewId: string): Promise<DeliveryResult | undefined> {
    return this.#actions.closeView(user, viewId);
  }

  /** A button click (or select choice) inside an open modal: `block_actions` with `container.type: 'view'`. */
  clickInView(input: ViewClickInput): Promise<DeliveryResult> {
    return this.#actions.clickInView(input);
  }

  /** A click on a button of the user's Home tab as last published for them: block_actions from the view, no channel. */
  clickInHome(input: HomeClickInput): Promise<DeliveryResult> {
    return this.#actions.clickInHome(input);
  }

  /** An Events API delivery to a bot in HTTP mode. */
  sendEventHttp(url: string, event: JsonObject, opts?: EventOptions & SigningOptions): Promise<HttpDeliveryResult> {
    return this.#actions.sendEventHttp(url, event, opts);
  }

  /** The user opens the app's Home tab: Slack sends `app_home_opened`, carrying the Home last published for them. */
  openHome(user: string, opts?: EventOptions): Promise<DeliveryResult> {
    return this.#actions.sendEvent(homeOpenedEvent(user, this.#config.botEvents, this.#views), opts);
  }

  /** `openHome` for a bot in HTTP mode. */
  openHomeHttp(url: string, user: string, opts?: EventOptions & SigningOptions): Promise<HttpDeliveryResult> {
    return this.#actions.sendEventHttp(url, homeOpenedEvent(user, this.#config.botEvents, this.#views), opts);
  }

  sendSlashCommandHttp(url: string, input: SlashCommandInput & SigningOptions): Promise<HttpDeliveryResult> {
    return this.#actions.sendSlashCommandHttp(url, input);
  }

  clickButtonHttp(url: string, input: ButtonClickInput & SigningOptions): Promise<HttpDeliveryResult> {
    return this.#actions.clickButtonHttp(url, input);
  }

  /** Closes every socket (terminating stragglers, so no client can hold the process) and stops the server. */
  close(): Promise<void> {
    this.#closed ??= this.#shutdown();
    return this.#closed;
  }

  async #shutdown(): Promise<void> {
    this.faults.abortDelays();
    await this.#hub.close();
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator.invalid');
    const [, area, name] = /^\/(api|upload|response)\/([^/]+)$/.exec(url.pathname) ?? [];
    if (name === undefined || (req.method !== 'POST' && !(area === 'api' && req.method === 'GET'))) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (area === 'api') return this.#webApi.handle(req, res, name, url);
    if (area === 'upload') return handleUpload(req, res, name, this.#files, this.#recorder);
    return this.#responses.handle(req, res, name);
  }
}

export async function startSlackEmulator(opts?: EmulatorOptions): Promise<SlackEmulator> {
  const emulator = new SlackEmulator(opts);
  await emulator.listen();
  return emulator;
}
