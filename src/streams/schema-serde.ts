/**
 * A JSON serde that checks what it reads against a schema (zod 4, or any Standard Schema): the
 * door's check of an input topic (HTTP ingest refuses a record that does not match, with its
 * index) and the runtime's deserialization check (a record that fails goes to the topology's
 * deserialization handler). What it reads back is the schema's output (zod drops unknown keys
 * of an object, say), so the schema should accept its own output: no transforms.
 */
import { DeserializationError, messageOf } from "./errors";
import { CHECK_PARSED_JSON, type ChecksParsedJson, type Serde } from "./serde";
import type { SchemaOutput, StandardIssue, StandardSchemaV1 } from "./standard-schema";
import { formatPath } from "../util/path";

function describeIssue(issue: StandardIssue | undefined): string {
  if (!issue) return "does not match the schema";
  const path = issue.path && issue.path.length > 0 ? `${formatPath(issue.path)}: ` : "";
  return `${path}${issue.message}`;
}

export function schemaSerde<S extends StandardSchemaV1>(schema: S): Serde<SchemaOutput<S>> & ChecksParsedJson {
  const validate = schema["~standard"].validate;
  const check = (parsed: unknown): SchemaOutput<S> => {
    const result = validate(parsed);
    // Records are deserialized synchronously, inside the task's transaction.
    if (result instanceof Promise) throw new DeserializationError("the schema validates asynchronously; a serde needs a synchronous schema");
    if (result.issues) throw new DeserializationError(`does not match the schema: ${describeIssue(result.issues[0])}`);
    return result.value as SchemaOutput<S>;
  };
  return {
    serialize: (value) => {
      const text = JSON.stringify(value);
      if (text === undefined) throw new TypeError(`cannot serialize ${typeof value} as JSON`);
      return text;
    },
    deserialize: (text) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        throw new DeserializationError(`invalid JSON: ${messageOf(error)}`, undefined, { cause: error });
      }
      return check(parsed);
    },
    [CHECK_PARSED_JSON]: (value: unknown) => {
      check(value);
    },
  };
}
