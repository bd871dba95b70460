/**
 * `SubscriptionHub`: the WebSocket subscriptions of one topic partition — a store changelog's, for
 * store watches, or any topic's, for tails — (named `hub:<topic>/<partition>`, src/names.ts), held with the WebSocket Hibernation API so that an idle
 * subscriber costs no request and no duration (docs/subscriptions.md). The Worker authenticates,
 * takes the snapshot and forwards the upgrade with the snapshot's messages and position; the hub
 * accepts the socket (its state in the socket's attachment, src/subscriptions/hub-sockets.ts),
 * subscribes to its partition while any socket is open, and on each wake-up reads the new records
 * once, from the lowest position among its sockets, and pushes each to the sockets that watch it.
 * A tail's socket gets every record from its position on, with a `gap` for offsets gone; a key's
 * socket the changelog no longer serves gets `resync` and a fresh snapshot from the owning task.
 * It follows the changelog, not the task: a task's migration or crash never touches its sockets.
 * It writes one row of its own: its counters (GET /metrics), saved at most every
 * COUNTERS_SAVE_MS at the end of a wake-up, and before every answer to `metrics()`.
 */
import { DurableObject } from "cloudflare:workers";
import { OffsetOutOfRange } from "../src/log/errors";
import type { LogRecord, TopicPartition } from "../src/log/types";
import { instanceName, subscriptionHubName } from "../src/names";
import { askActive, type ClusterPort } from "../src/coordinator/assignment-view";
import { planResnapshot, resnapshotOf, sortLost } from "../src/subscriptions/hub-resync";
import { type SnapshotPorts, snapshotPorts, takeSnapshot } from "../src/subscriptions/store-snapshot";
import type { Snapshot } from "../src/subscriptions/watch-loop";
import { toMessage } from "../src/kafka-rest/fetch";
import { keyForAnswer } from "../src/streams/key-text";
import { changeData } from "../src/subscriptions/change-data";
import { HubCounters, type HubMetrics } from "../src/subscriptions/hub-counters";
import { FOLLOW_FETCH } from "../src/subscriptions/follow-log";
import {
  acknowledge,
  behind,
  hasRoom,
  type HubSocket,
  startTag,
  newSocket,
  outside,
  parseHubStart,
  planSocket,
  planTail,
  planTailOutside,
  RESYNC_CLOSE,
  RESYNC_MESSAGE,
  readFrom,
  refusal,
  stalled,
} from "../src/subscriptions/hub-sockets";
import { SLOW_SUBSCRIBER, SOCKET_WINDOW } from "../src/subscriptions/socket-credit";
import { logEvent } from "../src/util/logging";
import { Serial } from "../src/util/serial";
import type { ObjectHost, SubscriptionHubCalls, TaskObjectCalls } from "./calls";

/** The hub's one row: its counters (src/subscriptions/hub-counters.ts). */
const COUNTERS_ROW = "counters";
/**
 * How often a wake-up saves the counters at most: a row per wake-up would be a row per commit of a
 * watched task. An eviction loses at most this much counting; a count once answered is never lost.
 */
const COUNTERS_SAVE_MS = 10_000;

/** Batches read per wake-up at most before the hub yields (a wake-up or an acknowledgement goes on). */
const MAX_ROUNDS = 20;

interface Held {
  readonly ws: WebSocket;
  readonly state: HubSocket;
}

export class SubscriptionHub extends DurableObject implements SubscriptionHubCalls {
  private readonly serial = new Serial();
  /** The partition this hub subscribed to while awake (a subscription is idempotent: unknown after eviction). */
  private subscribed: string | undefined;
  /** Events pushed, reads, drops and refusals (GET /metrics): counted in memory, saved in the hub's one row (src/subscriptions/hub-counters.ts). */
  private counters = new HubCounters();
  /** When the counters were last saved (ms since the epoch; 0: not since this instance started). */
  private savedAt = 0;

  constructor(
    ctx: DurableObjectState,
    env: unknown,
    private readonly host: ObjectHost,
  ) {
    super(ctx, env as never);
    // The counts go on from what was saved: an eviction or a crash never lowers them.
    void ctx.blockConcurrencyWhile(async () => {
      this.counters = HubCounters.restore(await ctx.storage.get(COUNTERS_ROW)) ?? this.counters;
    });
  }

  /** The upgrade the Worker forwards (its `X-Edge-Streams-Hub-Start` header a HubStart): 101 with the socket, or 503 over a limit. */
  override async fetch(request: Request): Promise<Response> {
    const start = parseHubStart(parseJson(decodeURIComponent(request.headers.get("X-Edge-Streams-Hub-Start") ?? "")));
    if (!start || request.headers.get("Upgrade")?.toLowerCase() !== "websocket") return new Response("expected a subscription's upgrade", { status: 400 });
    const tag = startTag(start);
    const open = { hub: this.open().length, key: this.open(tag).length };
    const limits = { perHub: this.host.config.HUB_MAX_SOCKETS, perKey: this.host.config.HUB_MAX_SOCKETS_PER_KEY };
    const refused = refusal(open, limits, start.view);
    if (refused) {
      this.counters.refuse(open, limits);
      await this.save(false, COUNTERS_SAVE_MS);
    }
    if (refused) return Response.json({ code: "unavailable", message: refused }, { status: 503, headers: { "Retry-After": "1" } });
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server, [tag]);
    for (const message of start.messages) server.send(message);
    this.counters.pushed += start.messages.length;
    server.serializeAttachment(newSocket(start));
    // Subscribed before the first read: an append after that read wakes the hub.
    await this.serial.run(() => this.follow(start));
    this.ctx.waitUntil(this.pump());
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Its changelog partition grew (a log partition's wake-up). */
  async wake(source?: TopicPartition): Promise<void> {
    await this.pump(source);
  }

  /** Changelog reads this instance made (tests). */
  async stats(): Promise<{ sockets: number; reads: number; subscribed: boolean }> {
    return { sockets: this.open().length, reads: this.counters.reads, subscribed: this.subscribed !== undefined };
  }

  /** Sockets held now and the counters (GET /metrics): no read; a row written only when the counts changed since last saved. */
  async metrics(): Promise<HubMetrics> {
    // Saved first, and confirmed: the output gate holds this answer until the counts it gives are durable.
    await this.save(true, 0);
    return this.counters.metrics(this.open().length);
  }

  /**
   * Saves the counters when they changed and the last save is `atMostEveryMs` old. Unconfirmed at
   * the end of a wake-up (the next pushes are not held back for it); confirmed before an answer to
   * `metrics()`, so no count answered is lost.
   */
  private async save(confirmed: boolean, atMostEveryMs: number): Promise<void> {
    const now = Date.now();
    if (now - this.savedAt < atMostEveryMs) return;
    const unsaved = this.counters.unsaved();
    if (!unsaved) return;
    this.savedAt = now;
    await this.ctx.storage.put(COUNTERS_ROW, unsaved, { allowUnconfirmed: !confirmed });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const state = ws.deserializeAttachment() as HubSocket;
    const ack = typeof message === "string" ? (parseJson(message) as { ack?: unknown } | undefined)?.ack : undefined;
    const full = !hasRoom(state);
    if (!acknowledge(state, ack)) {
      close(ws, 1008, 'expected {"ack": n}, n the number of messages received so far');
      return;
    }
    ws.serializeAttachment(state);
    // A full window opened: this socket may be behind the others. An acknowledgement within the window
    // changes nothing a round would do (a thousand sockets' acknowledgements would each read the log).
    if (full) await this.pump();
  }

  override async webSocketClose(ws: WebSocket): Promise<void> {
    close(ws, 1000, "closed by the subscriber");
    await this.pump(ws.deserializeAttachment() as HubSocket);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    close(ws, 1011, "socket error");
    await this.pump(ws.deserializeAttachment() as HubSocket);
  }

  private open(tag?: string): WebSocket[] {
    return this.ctx.getWebSockets(tag).filter((ws) => ws.readyState === WebSocket.OPEN);
  }

  private async follow(tp: TopicPartition): Promise<void> {
    const name = subscriptionHubName(tp);
    if (this.subscribed === name) return;
    await this.host.objects.partition(tp).subscribe(name);
    this.subscribed = name;
  }

  /** Pushes what is new to every socket with room; with no socket open, unsubscribes (no more wake-ups). */
  private pump(tp?: TopicPartition): Promise<void> {
    return this.serial.run(async () => {
      try {
        for (let round = 0; round < MAX_ROUNDS; round++) {
          const held = this.open().map((ws) => ({ ws, state: ws.deserializeAttachment() as HubSocket }));
          if (held.length === 0) return await this.unfollow(tp);
          if (!(await this.round(held))) return;
        }
        // Still behind: go on after what queued meanwhile (acknowledgements, wake-ups).
        this.ctx.waitUntil(this.pump(tp));
      } finally {
        // Not per push, nor per wake-up: at most every COUNTERS_SAVE_MS.
        await this.save(false, COUNTERS_SAVE_MS);
      }
    });
  }

  /** One batch: read, push, write positions back. True when a socket is still behind. */
  private async round(all: Held[]): Promise<boolean> {
    const now = Date.now();
    const held = all.filter((h) => !(stalled(h.state, now) && this.dropSlow(h.ws)));
    const from = readFrom(held.map((h) => h.state));
    const first = held[0]?.state;
    if (from === undefined || first === undefined) return false;
    const tp = { topic: first.topic, partition: first.partition };
    this.counters.reads++;
    let result: Awaited<ReturnType<typeof this.host.log.fetch>>;
    try {
      result = await this.host.log.fetch(tp, from, FOLLOW_FETCH);
    } catch (error) {
      if (!(error instanceof OffsetOutOfRange)) throw error;
      const range = await this.host.log.offsets(tp);
      const lost: WebSocket[] = [];
      for (const h of held) {
        if (!outside(h.state.position, range)) continue;
        // A full window waits for its acknowledgement (which pumps again): a snapshot is sent within the window's credit, as any message.
        if (h.state.view !== "tail") {
          if (hasRoom(h.state)) lost.push(h.ws);
        }
        // A tail goes on after the offsets gone, as the Worker's tail does (src/subscriptions/tail-loop.ts).
        else if (h.ws.readyState === WebSocket.OPEN) {
          // Read again: an acknowledgement taken during the reads is in the attachment.
          const state = h.ws.deserializeAttachment() as HubSocket;
          const messages = planTailOutside(state, range);
          for (const message of messages) h.ws.send(message);
          this.counters.pushed += messages.length;
          if (messages.length > 0) h.ws.serializeAttachment(state);
        }
      }
      const resnapshotted = await this.resync(lost);
      return resnapshotted || held.some((h) => h.state.view === "tail" || !outside(h.state.position, range));
    }
    let more = false;
    // One renderer, and one message per record, for all the sockets watching the same key and view.
    const renderers = new Map<string, { render: (key: string, value: string | null) => unknown; rendered: Map<number, string> }>();
    // A tail's message of a record is the same for every tail: rendered once per batch.
    const tailed = new Map<number, string>();
    const renderTail = (record: LogRecord) => {
      const message = tailed.get(record.offset) ?? JSON.stringify({ event: "message", data: toMessage(tp, record), id: String(record.offset) });
      tailed.set(record.offset, message);
      return message;
    };
    const lost: WebSocket[] = [];
    // Read again after the fetch: an acknowledgement taken meanwhile is in the attachment, not in what was read before.
    for (const { ws } of held) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      const h = { ws, state: ws.deserializeAttachment() as HubSocket };
      const { position, sent, fullSince } = h.state;
      if (h.state.view === "tail") {
        const messages = planTail(h.state, { from, records: result.records, latest: result.latest }, now, renderTail);
        for (const message of messages) h.ws.send(message);
        this.counters.pushed += messages.length;
        if (h.state.position !== position || h.state.sent !== sent || h.state.fullSince !== fullSince) h.ws.serializeAttachment(h.state);
        more ||= behind(h.state, result.latest);
        continue;
      }
      const watched = `${h.state.store}\n${h.state.view}\n${h.state.key}`;
      const shared = renderers.get(watched) ?? { render: this.renderer(h.state), rendered: new Map<number, string>() };
      renderers.set(watched, shared);
      const plan = planSocket(h.state, { from, records: result.records, latest: result.latest }, now, shared.render, undefined, shared.rendered);
      for (const message of plan.messages) h.ws.send(message);
      this.counters.pushed += plan.messages.length;
      // The changes before the gap are sent and written down; the resync comes after them.
      if (h.state.position !== position || h.state.sent !== sent || h.state.fullSince !== fullSince) h.ws.serializeAttachment(h.state);
      if (plan.resync) lost.push(h.ws);
      more ||= !plan.resync && behind(h.state, result.latest);
    }
    return (await this.resync(lost)) || more;
  }

  /**
   * Sockets the changelog no longer serves from their position. A subscriber's own socket of a key
   * (or a key's windows) gets `resync` and a fresh snapshot from the owning task, on the same socket,
   * one snapshot per key watched (src/subscriptions/hub-resync.ts); any other socket — the Worker's
   * (it takes the snapshot itself), or one whose snapshot cannot be taken now — is sent `resync` and
   * closed `4009`. True when a socket goes on (from its snapshot's offset).
   */
  private async resync(lost: readonly WebSocket[]): Promise<boolean> {
    const { groups, close } = sortLost(lost, (ws) => ws.deserializeAttachment() as HubSocket);
    for (const ws of close) closeResync(ws, this.counters);
    let goesOn = false;
    for (const group of groups) {
      const first = group[0]!.deserializeAttachment() as HubSocket;
      const found = this.host.application.store(first.store);
      const resnapshot = found && resnapshotOf(found.store, first);
      let snapshot: Snapshot;
      try {
        if (!found || !resnapshot) throw new Error(`no fresh snapshot of store ${first.store}'s ${first.view} view`);
        snapshot = await takeSnapshot(this.snapshotPorts(), found, [first.partition], resnapshot.selection, resnapshot.tooMany);
      } catch (error) {
        // The subscriber reconnects without lastEventId, and its Worker takes (or refuses) the snapshot.
        logEvent("hub.resnapshot-failed", { store: first.store, partition: first.partition, error: String(error) }, "warn");
        for (const ws of group) closeResync(ws, this.counters);
        continue;
      }
      for (const ws of group) {
        if (ws.readyState !== WebSocket.OPEN) continue;
        // Read again: an acknowledgement taken while the snapshot was taken is in the attachment.
        const state = ws.deserializeAttachment() as HubSocket;
        const messages = planResnapshot(state, resnapshot.target, snapshot, Date.now(), SOCKET_WINDOW);
        for (const message of messages) ws.send(message);
        ws.serializeAttachment(state);
        this.counters.pushed += messages.length;
        this.counters.drops.resync++;
        goesOn = true;
      }
    }
    return goesOn;
  }

  /** How this hub takes a snapshot: the owning task's active instance, found as the API finds it. */
  private snapshotPorts(): SnapshotPorts {
    const objects = this.host.objects;
    const cluster: ClusterPort<TaskObjectCalls> = {
      key: this.host,
      placements: this.host.config.PLACEMENTS,
      assignment: () => objects.coordinator().snapshot(),
      instance: (instance) => objects.taskObject(instanceName(instance)),
    };
    return snapshotPorts(
      (taskId, store, selection) => askActive(cluster, taskId, (stub) => stub.snapshot(store, selection)),
      this.host.log,
      this.host.application,
    );
  }

  private dropSlow(ws: WebSocket): true {
    this.counters.drops.slow++;
    return close(ws, SLOW_SUBSCRIBER, "too slow: no acknowledgement for 30 s; reconnect with your last id");
  }

  /** The event data of a change of the socket's key, as the Worker's watch renders it (src/subscriptions/change-data.ts). */
  private renderer(s: HubSocket): (key: string, value: string | null) => unknown {
    const store = this.host.application.store(s.store)?.store;
    if (!store) throw new Error(`unknown store ${s.store}`);
    return changeData(store, s.view, s.key, keyForAnswer(store.keySerde, s.key));
  }

  /** No socket is open: no more wake-ups (after an eviction the hub knows its partition from the wake-up or the socket that closed). */
  private async unfollow(tp: TopicPartition | undefined): Promise<void> {
    this.subscribed = undefined;
    if (tp) await this.host.objects.partition({ topic: tp.topic, partition: tp.partition }).unsubscribe(subscriptionHubName(tp));
  }
}

/** Closes a socket (already closing: nothing to do); true, for filters. */
function close(ws: WebSocket, code: number, reason: string): true {
  try {
    ws.close(code, reason);
  } catch (error) {
    logEvent("hub.close-failed", { error: String(error) }, "debug");
  }
  return true;
}

function closeResync(ws: WebSocket, counters: HubCounters): void {
  counters.drops.resync++;
  try {
    ws.send(RESYNC_MESSAGE);
  } catch {
    // Closed meanwhile.
  }
  close(ws, RESYNC_CLOSE, "resync: reconnect without lastEventId for a fresh snapshot");
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
