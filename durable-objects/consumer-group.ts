/**
 * `ConsumerGroup`: one consumer group of the Kafka REST endpoint, named `group:<id>`, plus one
 * object named `directory` that lists the groups (Durable Objects cannot be enumerated). The class
 * only wires storage, the log and RPC to `ConsumerGroupCoordinator`; errors travel back as values.
 */
import { DurableObject } from "cloudflare:workers";
import { groupOutcome, type GroupOutcome } from "../src/consumer-group/errors";
import { ConsumerGroupCoordinator, type ConsumeRequest } from "../src/consumer-group/group";
import type { GroupAssignments, Message, TopicPartitionOffset } from "../src/kafka-rest/dialect";
import type { GroupDirectoryCalls, ObjectHost } from "./calls";

/** A consumer group (or the directory); a Worker exports the class `defineEdgeStreams` makes of it (see TaskObject). */
export class ConsumerGroup extends DurableObject implements GroupDirectoryCalls {
  private readonly coordinator: ConsumerGroupCoordinator;

  constructor(ctx: DurableObjectState, env: unknown, host: ObjectHost) {
    super(ctx, env as never);
    const directory = () => host.objects.groupDirectory();
    this.coordinator = new ConsumerGroupCoordinator(ctx.storage, host.log, {
      directory: {
        add: async (group) => directory().addGroup(group),
        remove: async (group) => directory().removeGroup(group),
      },
    });
  }

  consume(group: string, request: ConsumeRequest): Promise<GroupOutcome<Message[]>> {
    return groupOutcome(() => this.coordinator.consume(group, request));
  }

  commit(group: string, instance: string, offsets?: TopicPartitionOffset[]): Promise<GroupOutcome<void>> {
    return groupOutcome(() => this.coordinator.commit(group, instance, offsets));
  }

  deleteInstance(group: string, instance: string): Promise<GroupOutcome<void>> {
    return groupOutcome(() => this.coordinator.deleteInstance(group, instance));
  }

  describe(group: string): Promise<GroupOutcome<GroupAssignments>> {
    return groupOutcome(() => this.coordinator.describe(group));
  }

  // ---- the directory object ----

  addGroup(group: string): void {
    this.coordinator.store.addGroup(group);
  }

  removeGroup(group: string): void {
    this.coordinator.store.removeGroup(group);
  }

  listGroups(): string[] {
    return this.coordinator.store.groups();
  }
}
