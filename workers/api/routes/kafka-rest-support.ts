/**
 * What the `/kafka` routes share: the dialect's error responses (statuses as in the rest of the
 * API, body `{error, status}` plus the log error code, see src/kafka-rest/errors.ts), the
 * validation hook, reading optional bodies, and the consumer group objects.
 */
import { logEvent } from "../../../src/util/logging";
import type { Context } from "hono";
import type { z } from "zod";
import type { ConsumerGroup } from "../../../durable-objects/consumer-group";
import { GroupError, unwrapGroup, type GroupOutcome } from "../../../src/consumer-group/errors";
import { dialectErrorBody } from "../../../src/kafka-rest/errors";
import { LogError } from "../../../src/log/errors";
import type { ApiEnv } from "../context";
import { ApiError, logHidden, toApiError } from "../http-error";

type KafkaContext = Context<ApiEnv>;

export function dialectErrorResponse(c: Context, error: unknown): Response {
  if (error instanceof GroupError) return c.json(dialectErrorBody(error.status, error.message), error.status);
  const apiError = toApiError(error);
  // The details of a 500 or 503 stay in the logs, never in the response.
  logHidden(c, error, apiError);
  if (apiError.retryAfterSeconds !== undefined) c.header("Retry-After", String(apiError.retryAfterSeconds));
  // A log error's code travels in front of its message (the UpstashLog of another deployment reads it back).
  const body =
    error instanceof LogError ? dialectErrorBody(apiError.status, apiError.message, error.code) : dialectErrorBody(apiError.status, apiError.message);
  return c.json(body, apiError.status);
}

interface Issue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

function describeIssue(issue: Issue | undefined): string {
  const path = issue?.path.length ? `${issue.path.map(String).join(".")}: ` : "";
  return `${path}${issue?.message ?? "invalid input"}`;
}

/** The hook for `zValidator`: answers 400 in the dialect's shape. */
export function invalidDialectInput(
  result: { success: true } | { success: false; error: { readonly issues: readonly Issue[] } },
  c: Context,
): Response | undefined {
  if (result.success) return undefined;
  return c.json(dialectErrorBody(400, describeIssue(result.error.issues[0])), 400);
}

/** Validates a value read by hand (optional or raw bodies), throwing a 400. */
export function validate<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ApiError(400, "invalid_input", describeIssue(result.error.issues[0]));
  return result.data;
}

/** The request body as text; `@upstash/kafka` sends no body for some calls despite its JSON type. */
export async function bodyText(c: KafkaContext): Promise<string> {
  return (await c.req.text()).trim();
}

/** The body parsed as JSON, or undefined when empty. */
export async function optionalJson(c: KafkaContext): Promise<unknown> {
  const text = await bodyText(c);
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ApiError(400, "invalid_input", "malformed JSON in request body");
  }
}

export function groupStub(c: KafkaContext, group: string): DurableObjectStub<ConsumerGroup> {
  return c.var.host.consumerGroup(group);
}

/** Calls a group object; a failed call (object reset, overloaded) is a 503 the client may retry. */
export async function callGroup<T>(fn: () => Promise<GroupOutcome<T>>): Promise<T> {
  let result: GroupOutcome<T>;
  try {
    result = await fn();
  } catch (error) {
    logEvent("http.unavailable", { call: "consumer group", error: String(error) }, "warn");
    throw new ApiError(503, "unavailable", "the consumer group does not answer; retry shortly", 1);
  }
  return unwrapGroup(result);
}
