/**
 * The consumer group calls of the `/kafka` dialect: consume, commit, committed, consumers and
 * delete-consumer. Membership, assignment and consumed positions belong to each group's
 * `ConsumerGroup` object; committed offsets are read straight from the log, their one owner.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono, type Context } from "hono";
import { z } from "zod";
import { SUCCESS, commitBody, consumeBody, consumeHeaders, consumerId, topicPartitionsBody } from "../../../src/kafka-rest/dialect";
import { logEvent } from "../../../src/util/logging";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";
import { refuseApplicationGroupCommit } from "../owned";
import { callGroup, groupStub, invalidDialectInput, optionalJson, validate } from "./kafka-rest-support";

export const kafkaGroups = new Hono<ApiEnv>();

const memberParams = z.object({ group: consumerId, instance: consumerId });
const memberTopicParams = memberParams.extend({ topic: z.string().min(1).max(249) });

async function consume(c: Context<ApiEnv>, group: string, instance: string, topics: readonly string[]): Promise<Response> {
  const headers = validate(consumeHeaders, {
    "kafka-enable-auto-commit": c.req.header("Kafka-Enable-Auto-Commit"),
    "kafka-auto-commit-interval": c.req.header("Kafka-Auto-Commit-Interval"),
    "kafka-auto-offset-reset": c.req.header("Kafka-Auto-Offset-Reset"),
  });
  // Auto-commit would commit into the group; reading in it without committing is harmless.
  if (headers["kafka-enable-auto-commit"]) refuseApplicationGroupCommit(c.var.host.application, group);
  const request = {
    instance,
    topics: [...topics],
    autoCommit: headers["kafka-enable-auto-commit"],
    autoCommitInterval: headers["kafka-auto-commit-interval"],
    offsetReset: headers["kafka-auto-offset-reset"],
  };
  // `timeout` is only an upper bound: the call answers at once with what the log has.
  return c.json(await callGroup(() => groupStub(c, group).consume(group, request)));
}

kafkaGroups.post(
  "/consume/:group/:instance",
  zValidator("param", memberParams, invalidDialectInput),
  zValidator("json", consumeBody, invalidDialectInput),
  async (c) => {
    const { group, instance } = c.req.valid("param");
    return consume(c, group, instance, c.req.valid("json").topics);
  },
);

/** The short form of the dialect's quick start: `GET /consume/$GROUP/$INSTANCE/$TOPIC`. */
kafkaGroups.on(["GET", "POST"], "/consume/:group/:instance/:topic", zValidator("param", memberTopicParams, invalidDialectInput), async (c) => {
  const { group, instance, topic } = c.req.valid("param");
  return consume(c, group, instance, [topic]);
});

/** No body commits what the instance consumed; one offset or a list commits those. */
kafkaGroups.post("/commit/:group/:instance", zValidator("param", memberParams, invalidDialectInput), async (c) => {
  const { group, instance } = c.req.valid("param");
  refuseApplicationGroupCommit(c.var.host.application, group, instance, c.var.access.roles);
  const offsets = validate(commitBody, await optionalJson(c));
  await callGroup(() => groupStub(c, group).commit(group, instance, offsets));
  return c.json(SUCCESS);
});

/** The group's committed offsets, -1 where it has none; no membership needed. */
kafkaGroups.post(
  "/committed/:group/:instance",
  zValidator("param", memberParams, invalidDialectInput),
  zValidator("json", topicPartitionsBody, invalidDialectInput),
  async (c) => {
    const { group } = c.req.valid("param");
    const log = c.get("log");
    const offsets = await Promise.all(
      c.req.valid("json").map(async (tp) => ({ topic: tp.topic, partition: tp.partition, offset: (await log.committedOffset(group, tp))?.offset ?? -1 })),
    );
    return c.json(offsets);
  },
);

/** Groups with live instances and their assignments. */
kafkaGroups.get("/consumers", async (c) => {
  let groups: string[];
  try {
    groups = await c.var.host.groupDirectory().listGroups();
  } catch (error) {
    logEvent("http.unavailable", { call: "consumer group directory", error: String(error) }, "warn");
    throw new ApiError(503, "unavailable", "the consumer group directory does not answer; retry shortly", 1);
  }
  const described = await Promise.all(groups.map((group) => callGroup(() => groupStub(c, group).describe(group))));
  return c.json(described.filter((g) => g.instances.length > 0));
});

kafkaGroups.post("/delete-consumer/:group/:instance", zValidator("param", memberParams, invalidDialectInput), async (c) => {
  const { group, instance } = c.req.valid("param");
  await callGroup(() => groupStub(c, group).deleteInstance(group, instance));
  return c.json(SUCCESS);
});
