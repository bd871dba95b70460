/**
 * The default example's application as the Worker under test runs it: built from this test
 * project's vars (`PARTITIONS`, default 4), the same object the Worker's own objects use.
 */
import { env } from "cloudflare:workers";
import { streams } from "../../examples/orders-totals/app";

export { DEAD_LETTER_TOPIC, streams } from "../../examples/orders-totals/app";

export const application = streams.applicationFor(env);
