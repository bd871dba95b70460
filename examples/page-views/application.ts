/**
 * The second example application (page views per region per minute, joined with a region table),
 * as a Worker: `npm run start:page-views` serves it; its wrangler.toml points `#application` here.
 */
import { Application } from "../../src/application";
import { pageViewsTopology } from "../../src/streams/examples/page-views";

export const application = new Application(pageViewsTopology());
