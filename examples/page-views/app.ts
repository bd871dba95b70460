/** The second example's application (page views per region per minute, joined with a region table). */
import { defineEdgeStreams } from "edge-streams";
import { pageViewsTopology } from "./topology";

export const streams = defineEdgeStreams(pageViewsTopology());

/** The application the Worker runs (tests drive it with `TestDriver`). */
export const application = streams.application;
