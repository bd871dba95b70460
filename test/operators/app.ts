/** The application of the `operators` test project (test/operators/topology.ts). */
import { defineEdgeStreams } from "edge-streams";
import { operatorsTopology } from "./topology";

export const streams = defineEdgeStreams(operatorsTopology());

/** The application the Worker runs (the tests drive it with `TestDriver`). */
export const application = streams.application;
