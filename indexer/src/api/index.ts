// Ponder requires an API file exporting a Hono app. Ponder itself serves /health, /ready, /status and
// /metrics; this adds the read-only GraphQL API over the indexer's tables (handy for debugging; the
// service reads the tables directly from PostgreSQL).
import { db } from "ponder:api";
import schema from "ponder:schema";
import { Hono } from "hono";
import { graphql } from "ponder";

const app = new Hono();

app.use("/graphql", graphql({ db, schema }));

export default app;
