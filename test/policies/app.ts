/**
 * The application of the `policies` test project: the policies test application on topics
 * `policies-events` and `policies-flushed`, two partitions, flushing every 100 ms.
 */
import { defineEdgeStreams } from "edge-streams";
import { policiesApp } from "../support/policies-app";

export const PUNCTUATE_EVERY_MS = 100;

export const streams = defineEdgeStreams(policiesApp("policies", PUNCTUATE_EVERY_MS, 2));

/** The application the Worker runs (the tests drive it with `TestDriver`). */
export const application = streams.application;
