// The run: fetch the documents, then batches of generated requests, each checked answer by answer and,
// when every request of a batch was refused, checked for changed data; concurrency scenarios between.
import { checkResponse, SPEC_CODES, type Violation, type ViolationKind } from "./checks.ts";
import type { Fixtures } from "./fixtures.ts";
import { generate, OPEN_CATEGORIES, REFUSAL_CATEGORIES, type Category, type Generated } from "./generate.ts";
import { createSender, runLimited, type RawRequest } from "./http.ts";
import { codeTable, operationsOf, type Operation } from "./operations.ts";
import { Rng } from "./rng.ts";
import { SCENARIOS } from "./scenarios.ts";
import { createSnapshotter, type Snapshot } from "./snapshot.ts";
import type { ApiTarget } from "./targets.ts";

export interface FuzzOptions {
  baseUrl: string;
  targets: ApiTarget[];
  fixtures: Fixtures;
  /** The service's database, for the data-change check (skipped without it). */
  databaseUrl?: string;
  seed: number;
  requests: number;
  batchSize?: number;
  concurrency?: number;
  spoofClientAddress?: boolean;
  log?: (line: string) => void;
}

export interface RecordedViolation extends Violation {
  category: string;
  operation: string;
  count: number;
}

export interface FuzzResult {
  seed: number;
  requests: number;
  durationMs: number;
  documents: { target: string; operations: number }[];
  /** Requests sent to each API (the concurrency scenarios are the partner API's). */
  byTarget: Record<string, number>;
  byCategory: Record<string, Record<string, number>>;
  byStatus: Record<string, number>;
  byCode: Record<string, number>;
  violations: RecordedViolation[];
  violationCounts: Partial<Record<ViolationKind, number>>;
  fiveXx: number;
  shapeViolations: number;
  dataChanges: number;
  /** Batches checked for changed data, and those that could not be (a write was accepted in them). */
  /**
   * `checked`: batches of refusals only, compared as sent. `withAcceptedWrites`: batches with an accepted
   * write; their refused requests were sent again on their own (`refusalsRechecked` of them, in
   * `recheckRounds` compared sub-batches), and `refusalsUnchecked` were accepted on every resend (the
   * accepted write had made them valid) so no comparison could hold them alone.
   */
  batches: { checked: number; withAcceptedWrites: number; settleTimeouts: number; refusalsRechecked: number; recheckRounds: number; refusalsUnchecked: number };
  parserRefusals: number;
  undocumented: Record<string, number>;
  excludedTables: Record<string, string>;
  dataCheck: boolean;
}

// Weights of the categories within a batch of each kind.
const REFUSAL_WEIGHTS: [Category, number][] = REFUSAL_CATEGORIES.map((c) => [c, c === "path-variant-unauthenticated" || c === "broken-credentials" ? 3 : c === "cross-tenant" ? 2 : 1]);
const OPEN_WEIGHTS: [Category, number][] = OPEN_CATEGORIES.map((c) => [c, c === "valid" ? 4 : c === "unicode" || c === "boundary" || c === "path-variant-authenticated" ? 2 : 1]);
const SHAPE_KINDS: ViolationKind[] = ["error shape", "unknown error code", "status does not match code", "missing X-Request-Id", "missing rate-limit headers"];
const SAFE_METHODS = ["GET", "HEAD", "OPTIONS", "TRACE"];

export function describeRequest(request: RawRequest): string {
  const headers = Object.entries(request.headers)
    .map(([name, value]) => `${name}: ${(Array.isArray(value) ? value.join(" | ") : value).slice(0, 60)}`)
    .join("; ");
  const body = request.body ? ` body(${request.body.length}) ${request.body.subarray(0, 120).toString("utf8").replace(/\s+/g, " ")}` : "";
  return `${request.method} ${request.path.slice(0, 160)} [${headers.slice(0, 300)}]${body}`;
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzResult> {
  const log = options.log ?? (() => undefined);
  const batchSize = options.batchSize ?? 20;
  const concurrency = options.concurrency ?? 6;
  const started = Date.now();
  const sender = createSender(options.baseUrl);
  const root = new Rng(options.seed);

  const operations: Operation[] = [];
  const documents: FuzzResult["documents"] = [];
  for (const target of options.targets) {
    const response = await fetch(`${options.baseUrl}${target.documentPath}`, { headers: target.documentHeaders });
    if (response.status !== 200) throw new Error(`${target.name} document ${target.documentPath}: ${response.status}`);
    const ops = operationsOf(target, (await response.json()) as Parameters<typeof operationsOf>[1]);
    operations.push(...ops);
    documents.push({ target: target.name, operations: ops.length });
    log(`${target.name}: ${ops.length} operations from ${target.documentPath}`);
  }
  const { codes, conflicts } = codeTable(SPEC_CODES, operations);

  const result: FuzzResult = {
    seed: options.seed,
    requests: 0,
    durationMs: 0,
    documents,
    byTarget: {},
    byCategory: {},
    byStatus: {},
    byCode: {},
    violations: [],
    violationCounts: {},
    fiveXx: 0,
    shapeViolations: 0,
    dataChanges: 0,
    batches: { checked: 0, withAcceptedWrites: 0, settleTimeouts: 0, refusalsRechecked: 0, recheckRounds: 0, refusalsUnchecked: 0 },
    parserRefusals: 0,
    undocumented: {},
    excludedTables: {},
    dataCheck: options.databaseUrl !== undefined,
  };
  const seen = new Map<string, RecordedViolation>();
  const record = (violation: Violation, category: string, operation: string) => {
    result.violationCounts[violation.kind] = (result.violationCounts[violation.kind] ?? 0) + 1;
    if (violation.kind === "5xx") result.fiveXx += 1;
    if (SHAPE_KINDS.includes(violation.kind)) result.shapeViolations += 1;
    if (violation.kind === "data changed by refused request") result.dataChanges += 1;
    const key = `${violation.kind}|${category}|${operation}|${violation.status ?? ""}|${violation.kind === "concurrency" || violation.kind === "document" ? violation.detail : ""}`;
    const existing = seen.get(key);
    if (existing) existing.count += 1;
    else {
      const recorded = { ...violation, category, operation, count: 1 };
      seen.set(key, recorded);
      result.violations.push(recorded);
      log(`VIOLATION ${violation.kind} [${category}] ${operation}: ${violation.detail}${violation.request ? `\n    ${violation.request}` : ""}${violation.body ? `\n    -> ${violation.body.slice(0, 200)}` : ""}`);
    }
  };
  for (const conflict of conflicts) record({ kind: "document", detail: conflict }, "document", "document");

  const db = options.databaseUrl ? await createSnapshotter(options.databaseUrl) : undefined;
  if (db) {
    const { EXCLUDED_TABLES } = await import("./snapshot.ts");
    result.excludedTables = EXCLUDED_TABLES;
    log(`data check over ${db.tables.length} tables: ${db.tables.join(", ")}`);
  }

  const tallyResponse = (category: Category, status: number, code: string | undefined) => {
    const row = (result.byCategory[category] ??= {});
    row[String(status)] = (row[String(status)] ?? 0) + 1;
    result.byStatus[String(status)] = (result.byStatus[String(status)] ?? 0) + 1;
    if (code) result.byCode[code] = (result.byCode[code] ?? 0) + 1;
  };

  let before: Snapshot | undefined = db ? (await db.settle()).snapshot : undefined;
  let lastProgress = Date.now();
  let lastReported = 0;
  for (let batch = 0; result.requests < options.requests; batch += 1) {
    const rng = root.fork(`batch-${batch}`);

    // Every 25th batch: concurrency on one key.
    if (batch % 25 === 12 && options.targets.some((t) => t.name === "partner")) {
      const scenario = SCENARIOS[Math.floor(batch / 25) % SCENARIOS.length]!;
      const run = await scenario({ sender, fixtures: options.fixtures, rng, db, prefix: options.targets.find((t) => t.name === "partner")!.prefix, spoof: options.spoofClientAddress ?? false });
      run.responses.forEach((response, i) => {
        const verdict = checkResponse(response, { codes, head: false, rateLimitHeaders: true });
        tallyResponse("concurrency", response.status, verdict.code);
        for (const violation of verdict.violations) record({ ...violation, request: describeRequest(run.requests[i]!) }, "concurrency", `POST ${run.requests[i]!.path}`);
      });
      for (const violation of run.violations) record(violation, "concurrency", run.name);
      result.requests += run.responses.length;
      result.byTarget.partner = (result.byTarget.partner ?? 0) + run.responses.length;
      if (db) {
        const settled = await db.settle();
        if (!settled.settled) result.batches.settleTimeouts += 1;
        before = settled.snapshot;
      }
      continue;
    }

    const refusal = rng.bool(0.55);
    const weights = refusal ? REFUSAL_WEIGHTS : OPEN_WEIGHTS;
    const generated: Generated[] = [];
    for (let attempts = 0; generated.length < Math.min(batchSize, options.requests - result.requests) && attempts < batchSize * 5; attempts += 1) {
      const request = generate(rng.weighted(weights), operations, rng, { spoofClientAddress: options.spoofClientAddress ?? false });
      if (request) generated.push(request);
    }
    const responses = await runLimited(generated.map((g) => () => sender.send(g.request)), concurrency);
    result.requests += generated.length;
    for (const g of generated) result.byTarget[g.op.target.name] = (result.byTarget[g.op.target.name] ?? 0) + 1;

    let acceptedWrite = false;
    const accepts = (method: string, status: number) => (status >= 200 && status < 400) && !SAFE_METHODS.includes(method);
    responses.forEach((response, i) => {
      const g = generated[i]!;
      const operation = `${g.op.target.name} ${g.op.method.toUpperCase()} ${g.op.path}`;
      const underPrefix = g.request.path === g.op.target.prefix || g.request.path.startsWith(`${g.op.target.prefix}/`);
      const verdict = checkResponse(response, { codes, head: g.request.method === "HEAD", rateLimitHeaders: g.op.target.rateLimitHeaders && underPrefix });
      if (verdict.parserRefusal) result.parserRefusals += 1;
      tallyResponse(g.category, verdict.parserRefusal ? Number(`${response.status}`) : response.status, verdict.code);
      const described = () => `${describeRequest(g.request)} (${g.detail}; as ${g.principal})`;
      for (const violation of verdict.violations) record({ ...violation, request: described() }, g.category, operation);
      const ok = response.status >= 200 && response.status < 300;
      if (ok && g.mustRefuse) record({ kind: g.mustRefuse, detail: `answered ${response.status}: ${g.detail}`, request: described(), status: response.status, body: response.body.toString("utf8").slice(0, 200) }, g.category, operation);
      if (ok && g.foreign.length) {
        const text = response.body.toString("utf8");
        const sent = `${g.request.path} ${g.request.body?.toString("utf8") ?? ""}`;
        const leaked = g.foreign.find((id) => text.includes(id) && !sent.includes(id));
        if (leaked) record({ kind: "cross-tenant leak", detail: `answer holds ${leaked}, another tenant's`, request: described(), status: response.status }, g.category, operation);
      }
      if (verdict.code && !g.op.errorCodes.has(verdict.code) && !verdict.parserRefusal) {
        const key = `${operation} -> ${response.status} ${verdict.code}`;
        result.undocumented[key] = (result.undocumented[key] ?? 0) + 1;
      }
      if (accepts(g.request.method, response.status)) acceptedWrite = true;
    });

    /** Compares the database around `requests`; a change is reported against them. */
    const compared = async (after: Snapshot, requests: string[], category: string, operation: string) => {
      if (db!.equal(before!, after)) {
        before = after;
        return;
      }
      const changes = await db!.diff(before!, after);
      record(
        {
          kind: "data changed by refused request",
          detail: `batch ${batch}: ${changes.map((c) => `${c.table} +${c.added}/-${c.removed}${c.examples.length ? ` e.g. ${c.examples[0]}` : ""}`).join("; ")}\n    requests of the batch:\n      ${requests.join("\n      ")}`,
        },
        category,
        operation,
      );
      // Start the next batch from a quiet database, so one change is not reported twice.
      before = (await db!.settle()).snapshot;
    };

    if (db && before) {
      if (acceptedWrite) {
        result.batches.withAcceptedWrites += 1;
        const settled = await db.settle();
        if (!settled.settled) result.batches.settleTimeouts += 1;
        before = settled.snapshot;
        // The batch's refused requests, sent again as their own sub-batch from the settled database and
        // compared. One that is now accepted (the batch's accepted write made it valid) leaves the
        // sub-batch, which is sent again without it, at most a few times.
        let refused = generated.filter((_, i) => responses[i]!.status >= 400);
        for (let round = 0; refused.length > 0 && round < 3; round += 1) {
          const again = await runLimited(refused.map((g) => () => sender.send(g.request)), concurrency);
          again.forEach((response, i) => {
            const g = refused[i]!;
            for (const violation of checkResponse(response, { codes, head: g.request.method === "HEAD", rateLimitHeaders: false }).violations.filter((v) => v.kind === "5xx")) {
              record({ ...violation, request: describeRequest(g.request) }, g.category, `${g.op.target.name} ${g.op.method.toUpperCase()} ${g.op.path}`);
            }
          });
          const stillRefused = refused.filter((_, i) => again[i]!.status >= 400);
          if (stillRefused.length === refused.length) {
            result.batches.recheckRounds += 1;
            result.batches.refusalsRechecked += refused.length;
            const requests = refused.map((g, i) => `${again[i]!.status} ${g.category}: ${describeRequest(g.request).slice(0, 200)}`);
            await compared(await db.take(), requests, "refusals of a batch with accepted writes", `batch ${batch} (refusals sent again)`);
            refused = [];
          } else {
            const resettled = await db.settle();
            if (!resettled.settled) result.batches.settleTimeouts += 1;
            before = resettled.snapshot;
            refused = stillRefused;
          }
        }
        result.batches.refusalsUnchecked += refused.length;
      } else {
        result.batches.checked += 1;
        const requests = generated.map((g, i) => `${responses[i]!.status} ${g.category}: ${describeRequest(g.request).slice(0, 200)}`);
        await compared(await db.take(), requests, refusal ? "batch of refusals" : "batch of open requests", `batch ${batch}`);
      }
    }

    if (result.requests - lastReported >= 1000 || Date.now() - lastProgress > 15_000) {
      const seconds = (Date.now() - started) / 1000;
      log(`${result.requests}/${options.requests} requests, ${result.fiveXx} 5xx, ${result.shapeViolations} shape, ${result.dataChanges} data changes, ${result.violations.length} distinct violations, ${(result.requests / seconds).toFixed(0)} req/s`);
      lastReported = result.requests;
      lastProgress = Date.now();
    }
  }
  sender.close();
  await db?.close();
  result.durationMs = Date.now() - started;
  return result;
}

export function violationTotal(result: FuzzResult): number {
  return Object.values(result.violationCounts).reduce((sum, n) => sum + (n ?? 0), 0);
}
