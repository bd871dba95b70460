/**
 * The host of one application in one Worker environment: its configuration (the vars), the
 * catalog of every topic it serves, its log, and stubs of its Durable Objects by their durable
 * names (src/names.ts). Every object, route and test driver reaches the platform through this one
 * place. Built once per application and environment object, and shared by everything in the isolate.
 */
import type { CoordinatorCalls, ObjectDirectory, ObjectHost, RestoreWorkerCalls, TaskObjectCalls } from "../durable-objects/calls";
import type { Application } from "../src/application";
import { readConfig, type Config } from "../src/config";
import type { TopicCatalog } from "../src/log/topics";
import type { Log, TopicPartition } from "../src/log/types";
import { COORDINATOR_NAME, GROUP_DIRECTORY_NAME, groupObjectName, instanceName, partitionName, restoreWorkerName } from "../src/names";
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
    this.restoreShards = restoreShardCount(this.config.RESTORE_SHARDS, application.taskIds().length);
  }

  get log(): Log {
    return (this.opened ??= openLog(this.env.LOG_PARTITION, this.config, this.catalog));
  }

  coordinator() {
    return this.env.COORDINATOR.getByName(COORDINATOR_NAME);
  }

  /** The task object of an instance (`<task>@<placement>`). */
  taskObject(instance: { readonly taskId: string; readonly placement: string }) {
    return this.env.TASK_OBJECT.getByName(instanceName(instance));
  }

  /** A restore worker of a placement (shard 0 by default). */
  restoreWorker(placement: string, shard = 0) {
    return this.env.RESTORE_WORKER.getByName(restoreWorkerName(placement, shard));
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
    return this.env.LOG_PARTITION.getByName(partitionName(tp));
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
    taskObject: (name) => this.env.TASK_OBJECT.getByName(name) as unknown as TaskObjectCalls,
    coordinator: () => this.coordinator() as unknown as CoordinatorCalls,
    restoreWorker: (name) => this.env.RESTORE_WORKER.getByName(name) as unknown as RestoreWorkerCalls,
    partition: (tp) => this.partition(tp),
    groupDirectory: () => this.groupDirectory(),
  };
}
