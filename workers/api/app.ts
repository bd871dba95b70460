/**
 * The HTTP API of one application (Hono): the application's host (configuration, log, objects)
 * on every request, authentication and roles (authenticate.ts, the table in access.ts), JSON-only
 * writes, body limits, then the routes of docs/http-api.md. Every response says `no-store` and
 * `nosniff`; a wrong method on a known path answers 405 with `Allow`. Route modules stay small and
 * read the application from the context; this file only assembles them. docs/security.md has the why.
 */
import { Hono } from "hono";
import { methodNotAllowed } from "hono/method-not-allowed";
import { secureHeaders } from "hono/secure-headers";
import type { Application } from "../../src/application";
import { dialectErrorBody } from "../../src/kafka-rest/errors";
import type { EdgeStreamsEnv } from "../../platform/bindings";
import { Host } from "../../platform/host";
import { authenticate } from "./authenticate";
import { bodyLimit } from "./body-limit";
import type { ApiEnv } from "./context";
import { errorResponse } from "./http-error";
import { jsonOnly } from "./json-only";
import { admin } from "./routes/admin";
import { health } from "./routes/health";
import { ingest } from "./routes/ingest";
import { stores } from "./routes/stores";
import { watch } from "./routes/watch";
import { tail } from "./routes/tail";
import { tasks } from "./routes/tasks";
import { topics } from "./routes/topics";
import { isKafkaPath, kafkaRest } from "./routes/kafka-rest";
import { dialectErrorResponse } from "./routes/kafka-rest-support";
import { metrics } from "./routes/metrics";
import { scans } from "./routes/scans";
import { sessions } from "./routes/sessions";
import { sinks } from "./routes/sinks";
import { statusPage } from "./routes/status-page";

/** A new Hono app serving the application of each environment; more routes may be added to it before it serves. */
export function createApi(applicationFor: (env: EdgeStreamsEnv) => Application): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();

  // Errors of the middleware below reach here also for `/kafka`, which answers in its dialect.
  app.onError((error, c) => (isKafkaPath(c.req.path) ? dialectErrorResponse(c, error) : errorResponse(c, error)));
  app.notFound((c) => c.json({ error: "not_found", message: `no route for ${c.req.method} ${c.req.path}` }, 404));

  // Nothing an answer holds is for a shared cache, nor to be read as anything but its type. (HSTS
  // is the zone's to set.)
  app.use("*", secureHeaders({ strictTransportSecurity: false }));
  app.use("*", async (c, next) => {
    await next();
    c.header("Cache-Control", "no-store");
  });
  // A path served for other methods answers 405 with the methods it takes (every route the app
  // has when it first serves, routes added to `streams.app` included).
  app.use(
    "*",
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) => {
        const message = `${c.req.method} is not allowed on ${c.req.path}: use ${methods.join(" or ")}`;
        const body = isKafkaPath(c.req.path) ? dialectErrorBody(405, message) : { error: "method_not_allowed", message };
        return c.json(body, 405, { Allow: methods.join(", ") });
      },
    }),
  );

  app.get("/healthz", (c) => c.json({ ok: true }));

  app.use("*", async (c, next) => {
    const host = Host.of(applicationFor(c.env), c.env);
    c.set("host", host);
    c.set("config", host.config);
    c.set("log", host.log);
    await next();
  });
  app.use("*", authenticate);
  app.use("*", jsonOnly);
  app.use(
    "*",
    bodyLimit<ApiEnv>((c) => c.get("config").MAX_BODY_BYTES),
  );

  app.route("/", ingest);
  app.route("/", topics);
  app.route("/", tail);
  // Before `stores`: its key route would take `…/keys/:key/watch` as a key ending in "/watch".
  app.route("/", watch);
  app.route("/", stores);
  app.route("/", scans);
  app.route("/", metrics);
  app.route("/", statusPage);
  app.route("/", tasks);
  app.route("/", sinks);
  app.route("/", health);
  app.route("/", admin);
  app.route("/", sessions);
  app.route("/kafka", kafkaRest);
  return app;
}
