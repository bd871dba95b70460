/**
 * The application of the `policies` test project (`#application` points here): the policies test
 * app on topics `policies-events` and `policies-flushed`, two partitions, flushing every 100 ms.
 */
import { policiesApp } from "../support/policies-app";

export const PUNCTUATE_EVERY_MS = 100;

export const application = policiesApp("policies", PUNCTUATE_EVERY_MS, 2);
