// A forwarder in front of the sandbox CEP portal simulator, for the service's CEP_URL. By default it
// passes every request through unchanged and records the queries (so tests see each attempt). A test
// can make it a faulty portal that answers with the receipt of another payment than the one asked
// for, by rewriting the query it forwards (keyed by upper-case tracking key): the receipts stay the
// simulator's own, in the real shape.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface CepPortalProxy {
  url: string;
  /** The portal requests are forwarded to (the service's /simulators/cep); set once the service runs. */
  target: string | undefined;
  /** Every valida.do query received, as received. */
  queries: URLSearchParams[];
  /** Rewrites of the valida.do queries for a tracking key, applied before they are forwarded. */
  rewrites: Map<string, (form: URLSearchParams) => void>;
  /** Queries received for one tracking key. */
  queriesFor(trackingKey: string): number;
  /** How long each valida.do query takes to be answered, as a real portal's lookup does (default 0). */
  delayMs: number;
  close(): Promise<void>;
}

export async function startCepPortalProxy(): Promise<CepPortalProxy> {
  const server = http.createServer();
  const proxy: CepPortalProxy = {
    url: "",
    target: undefined,
    queries: [],
    rewrites: new Map(),
    delayMs: 0,
    queriesFor: (trackingKey) => proxy.queries.filter((form) => form.get("criterio")?.toUpperCase() === trackingKey.toUpperCase()).length,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  server.on("request", (req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      let body = Buffer.concat(chunks).toString("utf8");
      if (req.url?.startsWith("/valida.do")) {
        const form = new URLSearchParams(body);
        proxy.queries.push(new URLSearchParams(form));
        proxy.rewrites.get(form.get("criterio")?.toUpperCase() ?? "")?.(form);
        body = form.toString();
        if (proxy.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, proxy.delayMs));
      }
      if (!proxy.target) throw new Error("the CEP portal proxy has no target yet");
      const headers: Record<string, string> = {};
      if (req.headers["content-type"]) headers["content-type"] = req.headers["content-type"];
      if (req.headers.cookie) headers.cookie = req.headers.cookie;
      const upstream = await fetch(`${proxy.target}${req.url}`, { method: req.method, headers, body: req.method === "GET" ? undefined : body, redirect: "manual" });
      const answer: Record<string, string | string[]> = {};
      for (const name of ["content-type", "content-disposition"]) {
        const value = upstream.headers.get(name);
        if (value) answer[name] = value;
      }
      const cookies = upstream.headers.getSetCookie();
      if (cookies.length) answer["set-cookie"] = cookies;
      res.writeHead(upstream.status, answer);
      res.end(Buffer.from(await upstream.arrayBuffer()));
    })().catch((error: Error) => {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`proxy error: ${error.message}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
