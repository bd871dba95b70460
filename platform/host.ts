/**
 * The host of one application in one Worker environment: its configuration (the vars), the
 * catalog of every topic it serves, its log, and stubs of its Durable Objects by their durable
 * names (src/names.ts). Every object, route and test driver reaches the platform through this one
 * place. Built once per application and environment object, and shared by everything in the isolate.
 */
import type { CoordinatorCalls, ObjectDirectory, ObjectHost, RestoreWorkerCalls, SubscriptionHubCalls, TaskObjectCalls } from "../durable-objects/calls";
import type { Application } from "../src/application";
import { ConfigError, readConfig, type Config } from "../src/config";
import { tiers } from "../src/log/topic-config";
import type { TopicCatalog } from "../src/log/topics";
import type { Log, TopicPartition } from "../src/log/types";
import {
  COORDINATOR_NAME,
  GROUP_DIRECTORY_NAME,
  groupObjectName,
  instanceName,
  parseInstanceName,
  isSubscriptionHubName,
  parseRestoreWorkerName,
  topicPartition,
  restoreWorkerName,
  subscriptionHubName,
} from "../src/names";
import type { Jurisdiction, Placement } from "../src/placements";
import { logEvent } from "../src/util/logging";
import { restoreShardCount, restoreShardOf } from "../src/restore/sharding";
import type { EdgeStreamsEnv } from "./bindings";
import { openLog } from "./open-log";

const hosts = new WeakMap<Application, WeakMap<object, Host>>();

export class Host implements ObjectHost {
  readonly config: Config;
  /** Every topic of the application (inputs, outputs, changelogs, repartition topics) plus those of the `TOPICS` var. */
  readonly catalog: TopicCatalog;
  /** Restore workers per placement (`RESTORE_SHARDS`, `auto` sized by the application's tasks). */
  readonly restoreShards: number;
  private opened: Log | undefined;

  /** The host of `application` in `env`, made on first use. Throws `ConfigError` for invalid vars. */
  static of(application: Application, env: EdgeStreamsEnv): Host {
    let byEnv = hosts.get(application);
    if (!byEnv) hosts.set(application, (byEnv = new WeakMap()));
    let host = byEnv.get(env);
    if (!host) byEnv.set(env, (host = new Host(application, env)));
    return host;
  }

  private constructor(
    readonly application: Application,
    readonly env: EdgeStreamsEnv,
  ) {
    this.config = readConfig(env);
    this.catalog = application.catalog.with(this.config.TOPICS);
    checkTieredStorage(this.catalog, env);
    this.restoreShards = restoreShardCount(this.config.RESTORE_SHARDS, application.taskIds().length);
  }

  get log(): Log {
    return (this.opened ??= openLog(this.env.LOG_PARTITION, this.config, this.catalog));
  }

  coordinator() {
    return this.env.COORDINATOR.getByName(COORDINATOR_NAME);
  }

  /** The task object of an instance (`<task>@<placement>`), in its placement's location and jurisdiction. */
  taskObject(instance: { readonly taskId: string; readonly placement: string }) {
    return this.placed(this.env.TASK_OBJECT, instanceName(instance), instance.placement);
  }

  /** A restore worker of a placement (shard 0 by default), in the placement's location and jurisdiction. */
  restoreWorker(placement: string, shard = 0) {
    return this.placed(this.env.RESTORE_WORKER, restoreWorkerName(placement, shard), placement);
  }

  /** A restore worker by its name (`restore@<placement>[#<shard>]`). */
  restoreWorkerNamed(name: string) {
    const parsed = parseRestoreWorkerName(name);
    return parsed ? this.restoreWorker(parsed.placement, parsed.shard) : this.env.RESTORE_WORKER.getByName(name);
  }

  /** The subscription hub of a topic partition (a changelog's, or a tailed topic's), when the Worker has the binding (docs/subscriptions.md). */
  subscriptionHub(tp: TopicPartition) {
    return this.env.SUBSCRIPTION_HUB?.getByName(subscriptionHubName(tp));
  }

  /** A task object by its name (`<task>@<placement>`). */
  taskObjectNamed(name: string) {
    const parsed = parseInstanceName(name);
    return parsed ? this.taskObject(parsed) : this.env.TASK_OBJECT.getByName(name);
  }

  /**
   * An object of a placement: created with the placement's location hint, in its jurisdiction's
   * namespace (a jurisdiction is part of an object's identity: the same name in another
   * jurisdiction is another object). A placement no longer configured has neither.
   */
  private placed<T extends Rpc.DurableObjectBranded | undefined>(namespace: DurableObjectNamespace<T>, name: string, placement: string): DurableObjectStub<T> {
    const spec = this.placement(placement);
    const scoped = spec?.jurisdiction ? inJurisdiction(namespace, spec.jurisdiction) : namespace;
    return spec?.locationHint ? scoped.getByName(name, { locationHint: spec.locationHint }) : scoped.getByName(name);
  }

  /** A configured placement's settings. */
  placement(name: string): Placement | undefined {
    return this.config.placements.find((p) => p.name === name);
  }

  /** Every restore worker of a placement, shard by shard. */
  restoreWorkers(placement: string) {
    return Array.from({ length: this.restoreShards }, (_, shard) => this.restoreWorker(placement, shard));
  }

  /** The name of the restore worker serving an instance: its placement's shard for its task. */
  restoreWorkerNameOf(instance: { readonly taskId: string; readonly placement: string }): string {
    return restoreWorkerName(instance.placement, restoreShardOf(instance.taskId, this.restoreShards));
  }

  /** The object of a partition of the embedded log, whether or not the catalog declares it. */
  partition(tp: TopicPartition) {
    return this.env.LOG_PARTITION.getByName(topicPartition(tp));
  }

  consumerGroup(group: string) {
    return this.env.CONSUMER_GROUP.getByName(groupObjectName(group));
  }

  groupDirectory() {
    return this.env.CONSUMER_GROUP.getByName(GROUP_DIRECTORY_NAME);
  }

  /**
   * The objects as the objects themselves call them (durable-objects/calls.ts). RPC stubs' types
   * spell results differently from the classes' own signatures; each class `implements` its calls.
   */
  readonly objects: ObjectDirectory = {
    taskObject: (name) => this.taskObjectNamed(name) as unknown as TaskObjectCalls,
    coordinator: () => this.coordinator() as unknown as CoordinatorCalls,
    restoreWorker: (name) => this.restoreWorkerNamed(name) as unknown as RestoreWorkerCalls,
    listener: (name) =>
      isSubscriptionHubName(name)
        ? ((this.env.SUBSCRIPTION_HUB?.getByName(name) as unknown as SubscriptionHubCalls | undefined) ?? { wake: async () => {} })
        : (this.restoreWorkerNamed(name) as unknown as RestoreWorkerCalls),
    partition: (tp) => this.partition(tp),
    groupDirectory: () => this.groupDirectory(),
  };
}

let warnedLocalJurisdiction = false;

/**
 * The namespace restricted to a jurisdiction. Local workerd (`wrangler dev`, tests) does not
 * implement jurisdictions and says so: there, and only there, the unrestricted namespace is used,
 * with a warning (deployed, an object of the placement is never created outside it).
 */
function inJurisdiction<T extends Rpc.DurableObjectBranded | undefined>(
  namespace: DurableObjectNamespace<T>,
  jurisdiction: Jurisdiction,
): DurableObjectNamespace<T> {
  try {
    return namespace.jurisdiction(jurisdiction);
  } catch (error) {
    if (!/not implemented in workerd/i.test(String(error))) throw error;
    if (!warnedLocalJurisdiction) {
      warnedLocalJurisdiction = true;
      logEvent("placement.jurisdiction-ignored-locally", { jurisdiction, reason: String(error) }, "warn");
    }
    return namespace;
  }
}

/** A topic with `remote.storage.enable` needs the R2 bucket its closed rows move to: refused at start without it. */
function checkTieredStorage(catalog: TopicCatalog, env: EdgeStreamsEnv): void {
  if (env.TIERED_STORAGE !== undefined) return;
  const tiered = [...catalog.all.keys()].filter((topic) => tiers(catalog.config(topic)));
  if (tiered.length > 0) {
    throw new ConfigError(
      `invalid configuration: topic ${tiered.join(", ")} sets remote.storage.enable=true, but the Worker has no TIERED_STORAGE binding (an [[r2_buckets]] entry in wrangler.toml)`,
    );
  }
}
