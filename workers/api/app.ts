/**
 * The HTTP API of one application (Hono): the application's host (configuration, log, objects)
 * on every request, authentication, body limits, then the routes of docs/http-api.md. Route
 * modules stay small and read the application from the context; this file only assembles them.
 */
import { Hono } from "hono";
import type { Application } from "../../src/application";
import type { EdgeStreamsEnv } from "../../platform/bindings";
import { Host } from "../../platform/host";
import { bearerMatches, requiredToken } from "./auth";
import { bodyLimit } from "./body-limit";
import type { ApiEnv } from "./context";
import { ApiError, errorResponse } from "./http-error";
import { admin } from "./routes/admin";
import { health } from "./routes/health";
import { ingest } from "./routes/ingest";
import { stores } from "./routes/stores";
import { tasks } from "./routes/tasks";
import { topics } from "./routes/topics";
import { isKafkaPath, kafkaRest } from "./routes/kafka-rest";
import { dialectErrorResponse } from "./routes/kafka-rest-support";
import { metrics } from "./routes/metrics";
import { scans } from "./routes/scans";
import { statusPage } from "./routes/status-page";
import { PUBLIC_PAGES, sessionDecision } from "./status/session";

/** A new Hono app serving the application of each environment; more routes may be added to it before it serves. */
export function createApi(applicationFor: (env: EdgeStreamsEnv) => Application): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();

  // Errors of the middleware below reach here also for `/kafka`, which answers in its dialect.
  app.onError((error, c) => (isKafkaPath(c.req.path) ? dialectErrorResponse(c, error) : errorResponse(c, error)));
  app.notFound((c) => c.json({ error: "not_found", message: `no route for ${c.req.method} ${c.req.path}` }, 404));

  app.get("/healthz", (c) => c.json({ ok: true }));

  app.use("*", async (c, next) => {
    const host = Host.of(applicationFor(c.env), c.env);
    c.set("host", host);
    c.set("config", host.config);
    c.set("log", host.log);
    await next();
  });

  // The Kafka REST endpoint authenticates with Basic auth itself (the dialect's scheme).
  app.use("*", async (c, next) => {
    if (isKafkaPath(c.req.path)) return next();
    // The sign-in pages; the status page and other safe GET routes also take the session cookie.
    if (PUBLIC_PAGES.includes(c.req.path)) return next();
    const config = c.get("config");
    const token = requiredToken(config.API_TOKEN, config.localDevelopment, c.req.url);
    if (token !== null && !bearerMatches(c.req.header("Authorization"), token)) {
      const session = await sessionDecision(c, token);
      if (session === "allow") return next();
      if (session === "login") return c.redirect("/login", 303);
      c.header("WWW-Authenticate", 'Bearer realm="edge-streams"');
      throw new ApiError(401, "unauthorized", "missing or invalid bearer token");
    }
    await next();
  });

  app.use(
    "*",
    bodyLimit<ApiEnv>((c) => c.get("config").MAX_BODY_BYTES),
  );

  app.route("/", ingest);
  app.route("/", topics);
  app.route("/", stores);
  app.route("/", scans);
  app.route("/", metrics);
  app.route("/", statusPage);
  app.route("/", tasks);
  app.route("/", health);
  app.route("/", admin);
  app.route("/kafka", kafkaRest);
  return app;
}
