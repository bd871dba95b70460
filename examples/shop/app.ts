/** The third example's application (a shop: a global product catalog, a foreign-key join, category totals). */
import { defineEdgeStreams } from "edge-streams";
import { shopTopology } from "./topology";

export const streams = defineEdgeStreams(shopTopology());

/** The application the Worker runs (tests drive it with `TestDriver`). */
export const application = streams.application;
