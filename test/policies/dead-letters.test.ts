/**
 * A processing handler function on the real runtime (Kafka's `ProcessingExceptionHandler`,
 * KIP-1033, deciding per error): the policies application's handler sends an event its processor
 * rejects as invalid to `policies-dead-letters`, with Kafka's error headers, and its task goes on;
 * for any other error it answers "fail", and the uncaught-error policy stops the task
 * (test/policies/uncaught-errors.test.ts follows that path to the operator's resume).
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { application } from "./app";
import { partitionForKey } from "../../src/log/partitioner";
import { DEAD_LETTER_HEADERS } from "../../src/streams";
import type { TaskDescription } from "../../src/task/describe";
import { TestDriver } from "../../platform/testing/test-driver";
import { call, json } from "../support/api";
import { until } from "../support/until";

const driver = new TestDriver(env, application);
const taskOf = (key: string) => `0_${partitionForKey(key, 2)}`;

async function flushed(key: string): Promise<number | undefined> {
  const response = await call(`/stores/policies-flushed/keys/${encodeURIComponent(key)}`);
  return response.status === 404 ? undefined : ((await json(response)).value as number);
}

async function active(taskId: string): Promise<TaskDescription> {
  const { tasks } = await json<{ tasks: TaskDescription[] }>(await call("/tasks"));
  return tasks.find((t) => t.id === taskId && t.role === "active")!;
}

it("dead-letters what the handler chooses, and the task goes on", async () => {
  const key = "invalid-then-fine";
  const posted = await call("/topics/policies-events/records", {
    body: {
      records: [
        { key, value: { fail: "invalid" } },
        { key, value: {} },
      ],
    },
  });
  expect(posted.status).toBe(200);
  const { offsets } = await json<{ offsets: { partition: number; offset: number }[] }>(posted);
  await until(async () => (await flushed(key)) === 1, 10_000, "the valid event to be processed and flushed", 50);
  await until(async () => (await driver.read("policies-dead-letters")).some((r) => r.key === key), 10_000, "the dead letter", 50);

  const letters = (await driver.read("policies-dead-letters")).filter((r) => r.key === key);
  expect(letters).toHaveLength(1);
  const value = (name: string) => letters[0]!.headers.find((h) => h.key === name)?.value;
  expect(JSON.parse(letters[0]!.value)).toEqual({ fail: "invalid" });
  expect(value(DEAD_LETTER_HEADERS.exception)).toBe("InvalidEvent");
  expect(value(DEAD_LETTER_HEADERS.message)).toBe(`${key} is not a valid event`);
  expect(value(DEAD_LETTER_HEADERS.topic)).toBe("policies-events");
  expect(value(DEAD_LETTER_HEADERS.partition)).toBe(String(offsets[0]!.partition));
  expect(value(DEAD_LETTER_HEADERS.offset)).toBe(String(offsets[0]!.offset));
  const task = await active(taskOf(key));
  expect(task.failure).toBeNull();
  await until(async () => (await active(taskOf(key))).lag === 0, 10_000, "the input to be committed", 50);
});
