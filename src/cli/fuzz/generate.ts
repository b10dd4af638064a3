// Requests from an operation's schemas, valid and broken, each labelled with its category and with
// whether it must be refused (a 2xx answer to it is a violation).
import { deflateSync, gzipSync } from "node:zlib";
import type { ViolationKind } from "./checks.ts";
import type { RawRequest } from "./http.ts";
import type { Operation } from "./operations.ts";
import type { Rng } from "./rng.ts";
import type { Principal, ValueMode } from "./targets.ts";
import { outOfRangeValue, UNICODE_SAMPLES, validValue, wrongTypeValue, type Schema, type ValueOptions } from "./values.ts";

/** Categories whose requests must all be refused; a batch of them is checked for data changes. */
export const REFUSAL_CATEGORIES = [
  "wrong-type",
  "missing-field",
  "extra-field",
  "out-of-range",
  "not-an-object",
  "malformed-json",
  "huge-body",
  "deep-nesting",
  "content-type",
  "bad-encoding",
  "bad-idempotency-key",
  "method-not-allowed",
  "path-variant-unauthenticated",
  "broken-credentials",
  "cross-tenant",
  "bad-query",
] as const;

/** Categories that may be accepted: checked for no 5xx and the error shape. */
export const OPEN_CATEGORIES = ["valid", "boundary", "unicode", "invalid-utf8", "compressed", "path-variant-authenticated", "odd-headers", "options-head", "odd-query"] as const;

export type Category = (typeof REFUSAL_CATEGORIES)[number] | (typeof OPEN_CATEGORIES)[number] | "concurrency";

export interface Generated {
  category: Category;
  /** A 2xx is a violation of this kind. */
  mustRefuse?: ViolationKind;
  op: Operation;
  principal: string;
  /** What was done to the request, for the report. */
  detail: string;
  request: RawRequest;
  /** Ids the answer must not contain (other tenants'). */
  foreign: string[];
}

export interface GenerateOptions {
  /** Adds X-Forwarded-For with a random address (the service trusts the proxy): each unauthenticated request gets its own per-address rate-limit window. */
  spoofClientAddress: boolean;
}

// --- helpers ---

/** Percent-encodes UTF-8 bytes (lone surrogates become U+FFFD, as a client would send them). */
export function pct(value: string): string {
  return [...Buffer.from(value, "utf8")].map((byte) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`)).join("");
}

function choosePrincipal(op: Operation, rng: Rng, tenantOnly = false): Principal {
  const principals = op.target.principals.filter((p) => (!tenantOnly || (p.tenant && p.tenant.orders.length > 0)) && (!p.uses || p.uses(op.method, op.path)));
  return rng.weighted(principals.map((p) => [p, p.weight] as const));
}

interface Built {
  path: string;
  query: Record<string, string>;
  body: Record<string, unknown> | undefined;
}

function buildParts(op: Operation, principal: Principal, rng: Rng, mode: ValueMode, values: ValueOptions = {}): Built {
  const context = { path: op.path, method: op.method, principal, rng, mode };
  let path = op.path;
  for (const param of op.parameters.filter((p) => p.in === "path")) {
    let value = op.target.pathValue(param.name, context);
    if (values.unicode && rng.bool(0.3)) value = rng.bool() ? rng.pick(UNICODE_SAMPLES) : `${value}${rng.pick(UNICODE_SAMPLES)}`;
    path = path.replace(`{${param.name}}`, pct(value));
  }
  const query: Record<string, string> = {};
  for (const param of op.parameters.filter((p) => p.in === "query")) {
    if (!param.required && rng.bool(0.6)) continue;
    const supplied = op.target.fieldValue(param.name, param.schema, context);
    const value = supplied !== undefined ? supplied : validValue(param.schema, rng, values);
    query[param.name] = String(value);
  }
  const fill = (name: string, schema: Schema) => (values.boundary || (values.unicode && rng.bool(0.5)) ? undefined : op.target.fieldValue(name, schema, context));
  const body = op.body ? (validValue(op.body, rng, values, fill) as Record<string, unknown>) : undefined;
  return { path, query, body };
}

function queryString(query: Record<string, string>): string {
  const entries = Object.entries(query);
  return entries.length ? `?${entries.map(([k, v]) => `${pct(k)}=${pct(v)}`).join("&")}` : "";
}

function baseHeaders(principal: Principal | undefined, rng: Rng, options: GenerateOptions): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = { ...(principal?.headers ?? {}) };
  if (options.spoofClientAddress) headers["X-Forwarded-For"] = `10.${rng.int(0, 255)}.${rng.int(0, 255)}.${rng.int(1, 254)}`;
  return headers;
}

function jsonRequest(op: Operation, path: string, headers: Record<string, string | string[]>, body: unknown, rng: Rng): RawRequest {
  const request: RawRequest = { method: op.method.toUpperCase(), path, headers };
  if (body !== undefined) {
    request.body = Buffer.from(JSON.stringify(body), "utf8");
    headers["Content-Type"] = rng.pick(["application/json", "application/json", "application/json; charset=utf-8", "Application/JSON"]);
  }
  if (op.idempotent && rng.bool(0.3)) headers["Idempotency-Key"] = `fz-${rng.hex(16)}`;
  return request;
}

interface Field {
  path: string[];
  schema: Schema;
  required: boolean;
}

function fieldsOf(schema: Schema | undefined, prefix: string[] = []): Field[] {
  if (!schema || schema.type !== "object") return [];
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const out: Field[] = [];
  for (const [name, property] of Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {})) {
    const path = [...prefix, name];
    out.push({ path, schema: property, required: required.has(name) });
    out.push(...fieldsOf(property, path));
  }
  return out;
}

function objectsOf(schema: Schema | undefined, prefix: string[] = []): string[][] {
  if (!schema || schema.type !== "object") return [];
  return [prefix, ...Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {}).flatMap(([name, property]) => objectsOf(property, [...prefix, name]))];
}

/** Sets (or with `remove`, deletes) the field at `path`, creating valid parent objects on the way. */
function setField(body: Record<string, unknown>, root: Schema, path: string[], value: unknown, rng: Rng, remove = false): void {
  let node = body;
  let schema = root;
  for (const name of path.slice(0, -1)) {
    schema = ((schema.properties as Record<string, Schema>)[name] ?? {}) as Schema;
    if (node[name] === null || typeof node[name] !== "object" || Array.isArray(node[name])) node[name] = validValue(schema, rng, { allOptional: false });
    node = node[name] as Record<string, unknown>;
  }
  const last = path[path.length - 1]!;
  if (remove) delete node[last];
  else node[last] = value;
}

const WRITE_METHODS = ["post", "patch", "put"];

// --- path variants ---

function randomCase(text: string, rng: Rng): string {
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const out = [...text].map((c) => (rng.bool() ? c.toUpperCase() : c.toLowerCase())).join("");
    if (out !== text) return out;
  }
  return text.toUpperCase();
}

export function pathVariant(fullPath: string, prefix: string, rng: Rng): { path: string; variant: string } {
  const rest = fullPath.slice(prefix.length);
  const segments = fullPath.split("/");
  const variants: [string, () => string][] = [
    ["all upper case", () => fullPath.toUpperCase()],
    ["prefix in mixed case", () => randomCase(prefix, rng) + rest],
    ["version in upper case", () => prefix.replace("/v1", "/V1") + rest],
    ["route in upper case", () => prefix + rest.replace(/^\/([a-z-]+)/, (_, word: string) => `/${word.toUpperCase()}`)],
    ["trailing slash", () => `${fullPath}/`],
    ["double slash", () => {
      const i = rng.int(1, segments.length - 1);
      return [...segments.slice(0, i), "", ...segments.slice(i)].join("/");
    }],
    ["leading double slash", () => `/${fullPath}`],
    ["percent-encoded letter", () => {
      const positions = [...fullPath].map((c, i) => (/[a-z]/i.test(c) ? i : -1)).filter((i) => i >= 0 && i < prefix.length + 8);
      const i = rng.pick(positions);
      return `${fullPath.slice(0, i)}%${fullPath.charCodeAt(i).toString(16)[rng.bool() ? "toUpperCase" : "toLowerCase"]()}${fullPath.slice(i + 1)}`;
    }],
    ["dot-dot segment", () => `${prefix}/x/..${rest}`],
    ["dot-dot escape", () => `${prefix}/../${prefix.slice(1)}${rest}`],
    ["dot segment", () => `${prefix}/.${rest}`],
    ["encoded dot-dot", () => `${prefix}/x/%2e%2e${rest}`],
    ["encoded slash", () => {
      const slashes = [...fullPath].map((c, i) => (c === "/" && i > 0 ? i : -1)).filter((i) => i > 0);
      const i = rng.pick(slashes);
      return `${fullPath.slice(0, i)}${rng.pick(["%2F", "%2f"])}${fullPath.slice(i + 1)}`;
    }],
    ["backslash", () => fullPath.replace(/\/(?=[^/]*$)/, "\\")],
    ["semicolon parameter", () => `${prefix};x=1${rest}`],
    ["NUL byte", () => `${fullPath}%00`],
    ["full-width letter", () => fullPath.replace(/a/, "%EF%BD%81")],
    ["prefix without version", () => prefix.replace(/\/v1$/, "") + rest],
    ["other version", () => prefix.replace(/\/v1$/, "/v2") + rest],
  ];
  const [variant, make] = rng.pick(variants);
  const path = make();
  return path === fullPath ? { path: `${fullPath}/`, variant: "trailing slash" } : { path, variant };
}

// --- the generator ---

const MALFORMED_JSON = ['{"a":', "{'a':1}", "{a:1}", '{"a":1,}', '{"a":NaN}', '{"a":1} trailing', "/*c*/{}", '{"a":"\\x"}', '{"a":1}{"b":2}', "{", "}", "nul", '{"a":01}', '{"a":"unterminated}', "\u0000", '{"__proto__":'];
const NOT_OBJECTS = ["[]", '"text"', "1", "null", "true", "[{}]", '""', "-0"];

export function generate(category: Category, operations: Operation[], rng: Rng, options: GenerateOptions): Generated | undefined {
  const guarded = (op: Operation) => !op.target.open?.(op.method, op.path);
  const pickOp = (filter: (op: Operation) => boolean) => {
    const candidates = operations.filter(filter);
    return candidates.length ? rng.pick(candidates) : undefined;
  };
  const finish = (op: Operation, principal: Principal | undefined, detail: string, request: RawRequest, mustRefuse?: ViolationKind, mode: ValueMode = "own"): Generated => ({
    category,
    mustRefuse,
    op,
    principal: principal?.label ?? "none",
    detail,
    request,
    foreign: principal && mode !== "other" ? op.target.foreignIds(principal) : [],
  });
  const standard = (op: Operation, principal: Principal, mode: ValueMode, values: ValueOptions = {}) => {
    const parts = buildParts(op, principal, rng, mode, values);
    const headers = baseHeaders(principal, rng, options);
    return { parts, headers, full: op.target.prefix + parts.path };
  };

  switch (category) {
    case "valid":
    case "boundary":
    case "unicode": {
      const op = pickOp(() => true)!;
      const principal = choosePrincipal(op, rng);
      const values: ValueOptions = category === "boundary" ? { boundary: true } : category === "unicode" ? { unicode: true } : {};
      const { parts, headers, full } = standard(op, principal, rng.bool(0.9) ? "own" : "random", values);
      return finish(op, principal, category, jsonRequest(op, full + queryString(parts.query), headers, parts.body, rng));
    }
    case "wrong-type":
    case "missing-field":
    case "extra-field":
    case "out-of-range": {
      const op = pickOp((o) => o.body !== undefined && fieldsOf(o.body).length > 0)!;
      const principal = choosePrincipal(op, rng);
      const { parts, headers, full } = standard(op, principal, "own");
      const body = parts.body ?? {};
      const fields = fieldsOf(op.body);
      let detail: string;
      if (category === "missing-field" && fields.some((f) => f.required)) {
        const field = rng.pick(fields.filter((f) => f.required));
        setField(body, op.body!, field.path, undefined, rng, true);
        detail = `without ${field.path.join(".")}`;
      } else if (category === "extra-field" || category === "missing-field") {
        const where = rng.pick(objectsOf(op.body));
        const name = rng.pick(["extra", "__proto__", "constructor", "Type", "partnerUserRef ", "id", "status", "partnerId"]);
        const existing = where.length ? (body as Record<string, unknown>)[where[0]!] : body;
        if (where.length && (existing === undefined || existing === null || typeof existing !== "object")) setField(body, op.body!, [...where, "placeholder"], 1, rng, true);
        let target: Record<string, unknown> = body;
        for (const part of where) target = target[part] as Record<string, unknown>;
        // JSON.stringify drops a __proto__ key set by assignment: define it as an own property.
        Object.defineProperty(target, name, { value: rng.pick([1, "x", null, { a: 1 }]), enumerable: true, configurable: true, writable: true });
        detail = `unknown field ${[...where, name].join(".")}`;
      } else {
        const candidates = fields.filter((f) => (category === "wrong-type" ? wrongTypeValue(f.schema, rng) !== undefined : outOfRangeValue(f.schema, rng) !== undefined));
        if (!candidates.length) return undefined;
        const field = rng.pick(candidates);
        const value = category === "wrong-type" ? wrongTypeValue(field.schema, rng) : outOfRangeValue(field.schema, rng);
        setField(body, op.body!, field.path, value, rng);
        detail = `${field.path.join(".")} = ${JSON.stringify(value)?.slice(0, 40)}`;
      }
      return finish(op, principal, detail, jsonRequest(op, full + queryString(parts.query), headers, body, rng), "invalid input accepted");
    }
    case "not-an-object":
    case "malformed-json":
    case "huge-body":
    case "deep-nesting": {
      const op = pickOp((o) => WRITE_METHODS.includes(o.method))!;
      const principal = choosePrincipal(op, rng);
      const { parts, headers, full } = standard(op, principal, "own");
      let text: string;
      let detail: string;
      if (category === "not-an-object") {
        text = rng.pick(NOT_OBJECTS);
        detail = `body ${text}`;
      } else if (category === "malformed-json") {
        text = rng.pick(MALFORMED_JSON);
        detail = `body ${JSON.stringify(text)}`;
      } else if (category === "huge-body") {
        const size = rng.pick([65_537, 70_000, 200_000, 1_100_000]);
        const base = JSON.stringify(parts.body ?? {});
        text = rng.bool() ? base + " ".repeat(size) : JSON.stringify({ ...(parts.body ?? {}), [rng.pick(fieldsOf(op.body).map((f) => f.path[0]!).concat(["padding"]))]: "x".repeat(size) });
        detail = `${text.length} bytes`;
      } else {
        const depth = rng.pick([1_000, 5_000, 20_000]);
        text = rng.bool() ? `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}` : `${"[".repeat(depth)}${"]".repeat(depth)}`;
        detail = `nesting ${depth}`;
      }
      headers["Content-Type"] = "application/json";
      return finish(op, principal, detail, { method: op.method.toUpperCase(), path: full + queryString(parts.query), headers, body: Buffer.from(text, "utf8") }, "invalid input accepted");
    }
    case "content-type":
    case "bad-encoding":
    case "compressed":
    case "invalid-utf8": {
      const op = pickOp((o) => WRITE_METHODS.includes(o.method) && (category !== "invalid-utf8" || fieldsOf(o.body).some((f) => f.schema.type === "string")))!;
      const principal = choosePrincipal(op, rng);
      const { parts, headers, full } = standard(op, principal, "own");
      const json = JSON.stringify(parts.body ?? {});
      let body: Buffer = Buffer.from(json, "utf8");
      let detail: string;
      let mustRefuse: ViolationKind | undefined = "invalid input accepted";
      if (category === "content-type") {
        const type = rng.pick([undefined, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "application/jsonx", "text/json", "application/json-patch+json", "*/*", ""]);
        if (type !== undefined) headers["Content-Type"] = type;
        // An empty JSON object is no body at all to some parsers: send at least one byte of JSON.
        if (json === "{}") body = Buffer.from("{ }");
        detail = `Content-Type ${type === undefined ? "absent" : JSON.stringify(type)}`;
      } else if (category === "bad-encoding") {
        headers["Content-Type"] = "application/json";
        const [encoding, bytes] = rng.pick<[string, Buffer]>([
          ["gzip", Buffer.from("not gzip at all")],
          ["gzip", gzipSync(body).subarray(0, 12)],
          ["deflate", Buffer.from([0x78, 0x9c, 0xff, 0xff, 0x00])],
          ["br", Buffer.from([0x1b, 0xff, 0x00])],
          ["x-unknown", body],
          ["gzip, gzip", gzipSync(body)],
          ["compress", body],
        ]);
        headers["Content-Encoding"] = encoding;
        body = bytes;
        detail = `Content-Encoding ${encoding}, ${bytes.length} bytes`;
      } else if (category === "compressed") {
        headers["Content-Type"] = "application/json";
        const encoding = rng.pick(["gzip", "deflate", "identity"]);
        headers["Content-Encoding"] = encoding;
        body = encoding === "gzip" ? gzipSync(body) : encoding === "deflate" ? deflateSync(body) : body;
        detail = `Content-Encoding ${encoding}`;
        mustRefuse = undefined;
      } else {
        headers["Content-Type"] = "application/json";
        const field = rng.pick(fieldsOf(op.body).filter((f) => f.schema.type === "string" && f.path.length === 1));
        const marker = "@@INVALID_UTF8@@";
        const withMarker = JSON.stringify({ ...(parts.body ?? {}), [field.path[0]!]: `a${marker}b` });
        const bad = rng.pick([[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc0, 0xaf], [0xe2, 0x82], [0xfe, 0xfe, 0xff, 0xff]]);
        const [before, after] = withMarker.split(marker);
        body = Buffer.concat([Buffer.from(before!, "utf8"), Buffer.from(bad), Buffer.from(after!, "utf8")]);
        detail = `${field.path[0]} with bytes ${bad.map((b) => b.toString(16)).join(" ")}`;
        mustRefuse = undefined;
      }
      return finish(op, principal, detail, { method: op.method.toUpperCase(), path: full + queryString(parts.query), headers, body }, mustRefuse);
    }
    case "bad-idempotency-key": {
      const op = pickOp((o) => o.idempotent);
      if (!op) return undefined;
      const principal = choosePrincipal(op, rng);
      const { parts, headers, full } = standard(op, principal, "own");
      const request = jsonRequest(op, full + queryString(parts.query), headers, parts.body, rng);
      const key = rng.pick<string | string[]>(["k".repeat(256), "a b", "cl\u00e9", "tab\there", "\u00ff\u00fe", [`fz-${rng.hex(8)}`, `fz-${rng.hex(8)}`], "x".repeat(4096)]);
      headers["Idempotency-Key"] = key;
      return finish(op, principal, `Idempotency-Key ${JSON.stringify(key).slice(0, 40)}`, request, "invalid input accepted");
    }
    case "method-not-allowed": {
      const op = pickOp(() => true)!;
      const method = rng.pick(["PUT", "DELETE", "PATCH", "POST", "GET", "TRACE"].filter((m) => !op.pathMethods.includes(m.toLowerCase())));
      const authenticated = rng.bool(0.7);
      const principal = authenticated ? choosePrincipal(op, rng) : undefined;
      const { parts, full } = standard(op, choosePrincipal(op, rng), "own");
      const headers = baseHeaders(principal, rng, options);
      const request: RawRequest = { method, path: full + queryString(parts.query), headers };
      if (method !== "GET" && method !== "TRACE" && rng.bool(0.5)) {
        request.body = Buffer.from(JSON.stringify(parts.body ?? { a: 1 }));
        headers["Content-Type"] = "application/json";
      }
      return finish(op, principal, `${method} ${authenticated ? "with" : "without"} credentials`, request, "invalid input accepted");
    }
    case "path-variant-unauthenticated":
    case "path-variant-authenticated": {
      const op = pickOp((o) => category === "path-variant-authenticated" || guarded(o))!;
      const principal = choosePrincipal(op, rng);
      const { parts, full } = standard(op, principal, "own");
      const { path, variant } = pathVariant(full, op.target.prefix, rng);
      const authenticated = category === "path-variant-authenticated";
      const broken = authenticated ? undefined : op.target.brokenCredentials(rng);
      const headers = authenticated ? baseHeaders(principal, rng, options) : { ...baseHeaders(undefined, rng, options), ...broken!.headers };
      const request = jsonRequest(op, path + queryString(parts.query), headers, parts.body, rng);
      return finish(op, authenticated ? principal : undefined, `${variant}${broken ? `, ${broken.label}` : ""}: ${path.slice(0, 80)}`, request, authenticated ? undefined : "auth bypass");
    }
    case "broken-credentials": {
      const op = pickOp(guarded)!;
      const principal = choosePrincipal(op, rng);
      const { parts, full } = standard(op, principal, "own");
      const broken = op.target.brokenCredentials(rng);
      const headers = { ...baseHeaders(undefined, rng, options), ...broken.headers };
      // The allow-listed partner is refused on the address: it must come from one that is not listed.
      return finish(op, undefined, broken.label, jsonRequest(op, full + queryString(parts.query), headers, parts.body, rng), "auth bypass");
    }
    case "cross-tenant": {
      const op = pickOp((o) => o.target.tenants && (o.parameters.some((p) => p.in === "path") || (o.method === "post" && ["/orders", "/quotes"].includes(o.path))));
      if (!op) return undefined;
      const principal = choosePrincipal(op, rng, true);
      const { parts, headers, full } = standard(op, principal, "other");
      return finish(op, principal, `${principal.label} with another tenant's ids`, jsonRequest(op, full + queryString(parts.query), headers, parts.body, rng), "cross-tenant access", "other");
    }
    case "bad-query": {
      const op = pickOp(() => true)!;
      const principal = choosePrincipal(op, rng);
      const { parts, headers, full } = standard(op, principal, "own");
      const known = op.parameters.filter((p) => p.in === "query");
      // No prototype: a parameter named __proto__ must become a key, not the object's prototype.
      const query: Record<string, string> = Object.assign(Object.create(null) as Record<string, string>, parts.query);
      let detail: string;
      const breakable = known.filter((p) => wrongTypeValue(p.schema, rng) !== undefined || outOfRangeValue(p.schema, rng) !== undefined);
      if (breakable.length && rng.bool(0.7)) {
        const param = rng.pick(breakable);
        const wrong = param.schema.type === "integer" || param.schema.type === "number" ? rng.pick(["abc", "1.5", "-1", "1e400", "0x10", "", "NaN", "Infinity"]) : undefined;
        const value = wrong ?? outOfRangeValue(param.schema, rng);
        // Only values a number or the schema's constraints refuse (a number's wrong type may still coerce).
        if (value === undefined || (wrong !== undefined && ["0x10", "1e400"].includes(wrong))) return undefined;
        if (wrong === "-1" && (param.schema.minimum as number | undefined) !== undefined && (param.schema.minimum as number) <= -1) return undefined;
        query[param.name] = String(value);
        detail = `${param.name}=${String(value).slice(0, 30)}`;
      } else {
        const name = rng.pick(["foo", "api_key", "LIMIT", "limit[]", "__proto__", "status ", "x"]);
        if (known.some((p) => p.name === name)) return undefined;
        query[name] = "1";
        detail = `unknown parameter ${name}`;
      }
      return finish(op, principal, detail, jsonRequest(op, full + queryString(query), headers, parts.body, rng), "invalid input accepted");
    }
    case "odd-query": {
      const op = pickOp(() => true)!;
      const principal = choosePrincipal(op, rng);
      const { parts, headers, full } = standard(op, principal, "own");
      const known = op.parameters.filter((p) => p.in === "query").map((p) => p.name);
      const name = known.length ? rng.pick(known) : "x";
      const suffix = rng.pick([`${name}=1&${name}=2`, `${name}=%00`, `${name}=%zz`, `${name}=%C3%28`, `${name}=${"9".repeat(400)}`, `${name}=`, "&&&", `${name}`, `${name}=${"a".repeat(8000)}`, `${name}=%E2%80%AE`, `${name}[a]=1`]);
      const qs = queryString(parts.query);
      return finish(op, principal, `query ${suffix.slice(0, 40)}`, jsonRequest(op, `${full}${qs ? `${qs}&` : "?"}${suffix}`, headers, parts.body, rng));
    }
    case "odd-headers": {
      const op = pickOp(() => true)!;
      const principal = choosePrincipal(op, rng);
      const { parts, headers, full } = standard(op, principal, "own");
      const [detail, extra] = rng.pick<[string, Record<string, string | string[]>]>([
        ["header of 20 KiB", { "X-Fuzz": "a".repeat(20_480) }],
        ["header of 8 KiB", { "X-Fuzz": "a".repeat(8_192) }],
        ["90 headers", Object.fromEntries(Array.from({ length: 90 }, (_, i) => [`X-Fuzz-${i}`, String(i)]))],
        ["X-Request-Id chosen by the client", { "X-Request-Id": rng.pick(["fz-1", "\u00ff\u00fe", "x".repeat(5000), "a,b", "<script>"]) }],
        ["X-Forwarded-For garbage", { "X-Forwarded-For": rng.pick(["not-an-ip", "999.1.1.1", "::1, 10.0.0.1", "", "1.2.3.4:80", "[::1]", "2001:db8::1%eth0"]) }],
        ["Accept XML", { Accept: "application/xml" }],
        ["Accept-Encoding br, gzip", { "Accept-Encoding": "br, gzip" }],
        ["latin-1 user agent", { "User-Agent": "caf\u00e9\u00ff" }],
        ["Content-Length 0", { "Content-Length": "0" }],
        ["Expect 100-continue", { Expect: "100-continue" }],
        ["Connection close", { Connection: "close" }],
        ["duplicated Content-Type", { "Content-Type": ["application/json", "text/plain"] }],
      ]);
      const request = jsonRequest(op, full + queryString(parts.query), headers, parts.body, rng);
      Object.assign(request.headers, extra);
      if (detail === "Content-Length 0") delete request.body;
      return finish(op, principal, detail, request);
    }
    case "options-head": {
      const op = pickOp(() => true)!;
      const principal = rng.bool(0.7) ? choosePrincipal(op, rng) : undefined;
      const { parts, full } = standard(op, choosePrincipal(op, rng), "own");
      const method = rng.pick(["OPTIONS", "HEAD"]);
      return finish(op, principal, `${method} ${principal ? "with" : "without"} credentials`, { method, path: full + queryString(parts.query), headers: baseHeaders(principal, rng, options) }, principal || !guarded(op) ? undefined : "auth bypass");
    }
    default:
      return undefined;
  }
}
