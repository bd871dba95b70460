/**
 * A consumer group of the Kafka REST dialect, as its Durable Object runs it: instances join by
 * consuming, are assigned partitions among the live instances (see `assignment.ts`), and expire
 * when not heard from for a session timeout. Each instance reads from its consumed position, or,
 * for a partition it newly owns, from the group's committed offset, else the reset policy.
 *
 * Delivery is at least once: auto-commit commits, at the start of a consume call, the positions
 * reached by earlier calls (as Kafka's `poll` does), never the records it is about to return; a
 * partition that changes owner is resumed from the committed offset, not from the previous
 * owner's uncommitted position. Calls are serialized, because awaiting the log lets other calls in.
 */
import { GroupError } from "./errors";
import { assignPartitions } from "./assignment";
import type { StorageLike } from "../storage/sql";
import { GroupStore, type Position } from "./group-store";
import type { AutoOffsetReset, GroupAssignments, Message, TopicPartitionOffset } from "../kafka-rest/dialect";
import { epochFromInstanceId } from "../kafka-rest/commit-epoch";
import { readBounded } from "../kafka-rest/fetch";
import { OffsetOutOfRange, UnknownTopicOrPartition } from "../log/errors";
import type { Log, TopicPartition } from "../log/types";
import { topicPartition } from "../names";

/** An instance not heard from for this long leaves the group (Kafka's default `session.timeout.ms`). */
export const SESSION_TIMEOUT_MS = 45_000;

export interface ConsumeRequest {
  readonly instance: string;
  readonly topics: readonly string[];
  readonly autoCommit: boolean;
  readonly autoCommitInterval: number;
  readonly offsetReset: AutoOffsetReset;
}

/** Where groups are listed, for `GET /consumers`; Durable Objects cannot be enumerated. */
export interface GroupDirectory {
  add(group: string): Promise<void>;
  remove(group: string): Promise<void>;
}

export interface GroupOptions {
  readonly clock?: () => number;
  readonly sessionTimeoutMs?: number;
  readonly directory?: GroupDirectory;
}

export class ConsumerGroupCoordinator {
  readonly store: GroupStore;
  private readonly clock: () => number;
  private readonly sessionTimeoutMs: number;
  private queue: Promise<unknown> = Promise.resolve();
  /** Which assigned partition each instance reads first next time, so none is starved. */
  private readonly rotation = new Map<string, number>();

  constructor(
    storage: StorageLike,
    private readonly log: Log,
    private readonly options: GroupOptions = {},
  ) {
    this.store = new GroupStore(storage);
    this.clock = options.clock ?? Date.now;
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? SESSION_TIMEOUT_MS;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  consume(group: string, request: ConsumeRequest): Promise<Message[]> {
    return this.exclusive(async () => {
      const now = this.clock();
      const counts = await this.log.topics();
      for (const topic of request.topics) {
        if (!counts.has(topic)) throw new UnknownTopicOrPartition(`unknown topic ${JSON.stringify(topic)}`);
      }
      this.store.transaction(() => this.store.expireMembers(now - this.sessionTimeoutMs));
      const existing = this.store.member(request.instance);
      let lastCommit = existing?.lastCommit ?? now;
      if (existing && request.autoCommit && now - existing.lastCommit >= request.autoCommitInterval) {
        await this.commitOwned(group, request.instance);
        lastCommit = now;
      }
      // Listed before joining: if listing fails, the instance has not joined and a retry lists it.
      if (!existing) await this.options.directory?.add(group);
      this.store.putMember({ ...request, topics: [...request.topics], lastSeen: now, lastCommit });

      const assigned = assignPartitions(this.store.members(), counts).get(request.instance) ?? [];
      const starts = await Promise.all(assigned.map((tp) => this.startingPosition(group, request, tp)));
      const turn = this.rotation.get(request.instance) ?? 0;
      this.rotation.set(request.instance, turn + 1);
      const first = starts.length ? turn % starts.length : 0;
      const order = [...starts.slice(first), ...starts.slice(0, first)];
      const { messages, next } = await readBounded(
        this.log,
        order.map((s) => ({ topic: s.topic, partition: s.partition, offset: s.position })),
      );
      this.store.transaction(() => {
        for (const start of starts) {
          const position = next.get(topicPartition(start)) ?? start.position;
          this.store.putPosition({ ...start, owner: request.instance, position, uncommitted: start.uncommitted || position !== start.position });
        }
      });
      return messages;
    });
  }

  /** Where an instance reads a partition from, checked against the partition's kept range. */
  private async startingPosition(group: string, request: ConsumeRequest, tp: TopicPartition): Promise<Position> {
    const [held, range] = await Promise.all([Promise.resolve(this.store.position(tp)), this.log.offsets(tp)]);
    const inRange = (offset: number) => offset >= range.earliest && offset <= range.latest;
    const at = (position: number, uncommitted: boolean): Position => ({ ...tp, owner: request.instance, position, uncommitted });
    if (held && held.owner === request.instance && inRange(held.position)) return at(held.position, held.uncommitted);
    const committed = await this.log.committedOffset(group, tp);
    if (committed && inRange(committed.offset)) return at(committed.offset, false);
    // A reset position counts as uncommitted: committing it keeps a later reset from skipping ahead.
    switch (request.offsetReset) {
      case "earliest":
        return at(range.earliest, true);
      case "latest":
        return at(range.latest, true);
      case "none":
        throw new GroupError(409, `group ${group} has no valid committed offset for ${topicPartition(tp)} and Kafka-Auto-Offset-Reset is none`);
    }
  }

  /** Commits the positions this instance reached and has not committed yet. */
  private async commitOwned(group: string, instance: string): Promise<void> {
    const pending = this.store.ownedPositions(instance).filter((p) => p.uncommitted);
    await Promise.all(pending.map((p) => this.log.commitOffset(group, p, { offset: p.position, metadata: "" })));
    this.store.transaction(() => pending.forEach((p) => this.store.markCommitted(p, p.position)));
  }

  /**
   * Commits the given offsets, or, without any, what the instance consumed. Explicit offsets need
   * no membership (as Kafka's standalone commits); all are checked before any is written.
   */
  commit(group: string, instance: string, offsets?: readonly TopicPartitionOffset[]): Promise<void> {
    return this.exclusive(async () => {
      const now = this.clock();
      if (offsets === undefined) {
        this.store.transaction(() => this.store.expireMembers(now - this.sessionTimeoutMs));
        const member = this.store.member(instance);
        if (!member) throw this.unknownInstance(group, instance);
        this.store.putMember({ ...member, lastSeen: now });
        await this.commitOwned(group, instance);
        return;
      }
      const ranges = await Promise.all(offsets.map((o) => this.log.offsets(o)));
      offsets.forEach((o, i) => {
        if (o.offset > ranges[i]!.latest) {
          throw new OffsetOutOfRange(`cannot commit offset ${o.offset} for ${topicPartition(o)}: the end offset is ${ranges[i]!.latest}`);
        }
      });
      // A task instance of an Edge Streams deployment commits with its epoch as the instance id.
      const epoch = epochFromInstanceId(instance);
      await Promise.all(offsets.map((o) => this.log.commitOffset(group, o, { offset: o.offset, metadata: "", ...(epoch === undefined ? {} : { epoch }) })));
      this.store.transaction(() => offsets.forEach((o) => this.store.markCommitted(o, o.offset)));
    });
  }

  /** Removes an instance; with auto-commit on, first commits what it consumed (as Kafka's close). */
  deleteInstance(group: string, instance: string): Promise<void> {
    return this.exclusive(async () => {
      const member = this.store.member(instance);
      if (!member) throw this.unknownInstance(group, instance);
      if (member.autoCommit) await this.commitOwned(group, instance);
      this.store.transaction(() => this.store.removeMember(instance));
      if (this.store.members().length === 0) await this.options.directory?.remove(group);
    });
  }

  /** The live instances and their assignments; an empty group takes itself off the directory. */
  describe(group: string): Promise<GroupAssignments> {
    return this.exclusive(async () => {
      this.store.transaction(() => this.store.expireMembers(this.clock() - this.sessionTimeoutMs));
      const members = this.store.members();
      if (members.length === 0) {
        await this.options.directory?.remove(group);
        return { name: group, instances: [] };
      }
      const assignment = assignPartitions(members, await this.log.topics());
      const instances = members.map((m) => {
        const topics = new Map<string, number[]>();
        for (const tp of assignment.get(m.instance) ?? []) {
          let partitions = topics.get(tp.topic);
          if (!partitions) topics.set(tp.topic, (partitions = []));
          partitions.push(tp.partition);
        }
        return { name: m.instance, topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) };
      });
      return { name: group, instances };
    });
  }

  private unknownInstance(group: string, instance: string): GroupError {
    return new GroupError(
      404,
      `consumer instance ${JSON.stringify(instance)} is not in group ${JSON.stringify(group)} (never joined, deleted, or silent for over ${this.sessionTimeoutMs} ms)`,
    );
  }
}
