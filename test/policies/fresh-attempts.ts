/**
 * Setup of the `policies` project, after test/support/fresh-workerd.ts: its files share a workerd,
 * and the test application counts failed attempts per record in the isolate (outside its objects),
 * by offsets that start again from 0 on the fresh storage: forgotten before each file.
 */
import { beforeAll } from "vitest";
import { forgetAttempts } from "../support/policies-app";

beforeAll(() => {
  forgetAttempts();
});
