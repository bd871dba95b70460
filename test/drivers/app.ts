/** The application of the `drivers` test project (test/drivers/topology.ts). */
import { defineEdgeStreams } from "edge-streams";
import { driversTopology } from "./topology";

export const streams = defineEdgeStreams(driversTopology());

/** The application the Worker runs (the tests drive it with `TestDriver`). */
export const application = streams.application;
