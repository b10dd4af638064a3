import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import http from "node:http";
import { after, before, beforeEach, describe, test } from "node:test";
import { bodyParser } from "@koa/bodyparser";
import { Router } from "@koa/router";
import Koa from "koa";
import {
  CepQueryError,
  classifyPortalPage,
  createCepPortalClient,
} from "../../src/integrations/cep-portal.ts";
import type { CepQuery } from "../../src/integrations/cep-portal.ts";
import { verifyCepReceipt } from "../../src/integrations/cep-receipt.ts";
import { createCepPortalSimulator } from "../../src/sandbox/simulators/cep-portal.ts";

type Running = { baseUrl: string; close(): Promise<void> };

async function listen(handler: http.RequestListener): Promise<Running> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const SELLER_CLABE = "723969000011000077"; // Cuenca, participant 90723
const PAID_AT = new Date("2026-03-10T17:05:09.000Z"); // Tuesday 11:05:09 in Mexico City

let clock = new Date("2026-03-10T18:00:00.000Z");
const sim = createCepPortalSimulator({ now: () => clock });
let portal: Running;
let cepUrl: string;

before(async () => {
  const app = new Koa();
  const root = new Router();
  root.use("/simulators/cep", sim.router.routes(), sim.router.allowedMethods());
  app.use(root.routes());
  portal = await listen(app.callback());
  cepUrl = `${portal.baseUrl}/simulators/cep`;
});

after(async () => {
  await portal.close();
});

beforeEach(() => {
  sim.reset();
  clock = new Date("2026-03-10T18:00:00.000Z");
});

function record(overrides: Partial<Parameters<typeof sim.recordPayment>[0]> = {}) {
  return sim.recordPayment({
    trackingKey: "MBAN01002603100012345678",
    operationAt: PAID_AT,
    amountMxn: "17250.00",
    beneficiaryAccount: SELLER_CLABE,
    beneficiaryName: "VENDEDORA DE PRUEBA SA DE CV",
    receiverBankCode: "90723",
    senderBankCode: "40012",
    senderAccount: "012180015379616853",
    senderName: "COMPRADOR DE PRUEBA",
    concept: "ORDEN ord_123",
    ...overrides,
  });
}

function query(overrides: Partial<CepQuery> = {}): CepQuery {
  return {
    operationDate: "2026-03-10",
    trackingKey: "MBAN01002603100012345678",
    senderBankCode: "40012",
    receiverBankCode: "90723",
    beneficiaryAccount: SELLER_CLABE,
    amountMxn: "17250.00",
    ...overrides,
  };
}

const client = (opts: { timeoutMs?: number; fetch?: typeof fetch; baseUrl?: string } = {}) =>
  createCepPortalClient({ baseUrl: opts.baseUrl ?? cepUrl, timeoutMs: opts.timeoutMs ?? 5000, fetch: opts.fetch });

describe("CEP portal client against the simulator", () => {
  test("found: downloads and parses the receipt, which verifies against the order", async () => {
    record();
    const result = await client().fetchCep(query());
    assert.equal(result.kind, "found");
    if (result.kind !== "found") return;
    assert.match(result.xml, /^<\?xml version="1.0" encoding="UTF-8"\?>\r\n<SPEI_Tercero FechaOperacion="2026-03-10" Hora="11:05:09" ClaveSPEI="90723" sello="/);
    const r = result.receipt;
    assert.equal(r.trackingKey, "MBAN01002603100012345678");
    assert.equal(r.operationDate, "2026-03-10");
    assert.equal(r.operationTime, "11:05:09");
    assert.equal(r.operationAt, PAID_AT.toISOString());
    assert.equal(r.amountMxn, "17250.00");
    assert.equal(r.beneficiaryAccount, SELLER_CLABE);
    assert.equal(r.beneficiaryBank, "CUENCA");
    assert.equal(r.beneficiaryName, "VENDEDORA DE PRUEBA SA DE CV");
    assert.equal(r.senderAccount, "012180015379616853");
    assert.equal(r.senderBank, "BBVA MEXICO");
    assert.equal(r.senderName, "COMPRADOR DE PRUEBA");
    assert.equal(r.concept, "ORDEN ord_123");
    assert.equal(r.speiKey, "90723");
    assert.equal(r.certificateNumber, "00001000000000000001");
    assert.equal(Buffer.from(r.seal, "base64").length, 256);
    assert.ok(r.cadenaCDA.startsWith("||1|10032026|10032026|110509|90723|BBVA MEXICO|COMPRADOR DE PRUEBA|40|012180015379616853|"));
    assert.match(r.cepHash, /^0x[0-9a-f]{64}$/);
    assert.deepEqual(
      verifyCepReceipt(r, {
        sellerClabe: SELLER_CLABE,
        totalMxn: "17250",
        trackingKey: "MBAN01002603100012345678",
        lockedAt: new Date("2026-03-10T16:00:00.000Z"),
        lockExpiresAt: new Date("2026-03-11T16:00:00.000Z"),
      }),
      { ok: true },
    );
  });

  test("the seal is deterministic: fetching twice gives the same XML and cepHash", async () => {
    record();
    const a = await client().fetchCep(query());
    const b = await client().fetchCep(query());
    assert.ok(a.kind === "found" && b.kind === "found");
    assert.equal(a.xml, b.xml);
    assert.equal(a.receipt.cepHash, b.receipt.cepHash);
  });

  test("a generated tracking key has the usual shape and is found", async () => {
    const { trackingKey } = record({ trackingKey: undefined });
    assert.match(trackingKey, /^[A-Z]{1,6}\d{18}$/);
    const result = await client().fetchCep(query({ trackingKey }));
    assert.equal(result.kind, "found");
    assert.ok(result.kind === "found" && result.receipt.trackingKey === trackingKey);
  });

  test("among many payments, one is found by its tracking key in any case and by its reference, and generated keys never repeat", async () => {
    const generated = Array.from({ length: 500 }, (_, n) => record({ trackingKey: undefined, reference: String(1000 + n) }).trackingKey);
    assert.equal(new Set(generated).size, 500);
    record({ reference: "7654321" });
    const form = (criterio: string, tipo: string) =>
      `tipoCriterio=${tipo}&fecha=10-03-2026&criterio=${criterio}&emisor=40012&receptor=90723&cuenta=${SELLER_CLABE}&receptorParticipante=0&monto=17250&captcha=c&tipoConsulta=1`;
    for (const [criterio, tipo] of [["mban01002603100012345678", "T"], ["7654321", "R"], [generated[250]!, "T"], ["1250", "R"]] as const) {
      const res = await fetch(`${cepUrl}/valida.do`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form(criterio, tipo) });
      assert.equal(classifyPortalPage(await res.text()), "download_links", `${tipo} ${criterio}`);
    }
    const unknown = await fetch(`${cepUrl}/valida.do`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form("7654322", "R") });
    assert.equal(classifyPortalPage(await unknown.text()), "not_found");
  });

  test("not found: unknown key, amount one cent off, other account, other banks, other day", async () => {
    record();
    const c = client();
    for (const q of [
      query({ trackingKey: "MBAN01002603100012345679" }),
      query({ amountMxn: "17249.99" }),
      query({ beneficiaryAccount: "002010077777777771" }),
      query({ senderBankCode: "40014" }),
      query({ receiverBankCode: "90646" }),
      query({ operationDate: "2026-03-09" }),
    ]) {
      assert.deepEqual(await c.fetchCep(q), { kind: "not_found" }, JSON.stringify(q));
    }
  });

  test("a weekend payment is found by the date paid or by its SPEI operation date", async () => {
    const saturday = new Date("2026-03-14T20:00:00.000Z"); // Saturday 14:00 in Mexico City
    record({ operationAt: saturday });
    for (const operationDate of ["2026-03-14", "2026-03-16"]) {
      const result = await client().fetchCep(query({ operationDate }));
      assert.equal(result.kind, "found", operationDate);
      if (result.kind !== "found") continue;
      assert.equal(result.receipt.operationDate, "2026-03-16");
      assert.equal(result.receipt.creditDate, "2026-03-14");
      assert.equal(result.receipt.operationAt, saturday.toISOString());
    }
  });

  test("not yet available: simulator mode", async () => {
    record();
    sim.setMode("not_yet_available");
    assert.deepEqual(await client().fetchCep(query()), { kind: "not_yet_available" });
  });

  test("not yet available until the payment's availableAfter", async () => {
    record({ availableAfter: new Date("2026-03-10T18:30:00.000Z") });
    assert.deepEqual(await client().fetchCep(query()), { kind: "not_yet_available" });
    clock = new Date("2026-03-10T18:30:00.000Z");
    assert.equal((await client().fetchCep(query())).kind, "found");
  });

  test("rate limited: the portal's 'excedido el número máximo de consultas' page", async () => {
    record();
    sim.setMode("rate_limited");
    assert.deepEqual(await client().fetchCep(query()), { kind: "rate_limited" });
  });

  test("down: HTTP 500 is unavailable", async () => {
    record();
    sim.setMode("down");
    const result = await client().fetchCep(query());
    assert.equal(result.kind, "unavailable");
    assert.ok(result.kind === "unavailable" && result.reason.includes("500"));
  });

  test("malformed XML from the portal is unavailable, not a throw", async () => {
    record();
    sim.setMode("malformed_xml");
    const result = await client().fetchCep(query());
    assert.equal(result.kind, "unavailable");
    assert.ok(result.kind === "unavailable" && result.reason.startsWith("CEP XML rejected"));
  });

  test("the download needs the session cookie set by valida.do", async () => {
    record();
    const noSession = await fetch(`${cepUrl}/descarga.do?formato=XML`);
    const text = await noSession.text();
    assert.ok(!text.includes("SPEI_Tercero"));
    // A client that drops cookies never gets the XML.
    const dropCookies: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.delete("cookie");
      return fetch(input, { ...init, headers });
    };
    const result = await client({ fetch: dropCookies }).fetchCep(query());
    assert.equal(result.kind, "unavailable");
  });

  test("the client posts the portal's form and sends the session cookie on download", async () => {
    record();
    const seen: { url: string; method: string; body: string; cookie: string | null; type: string | null }[] = [];
    const spy: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      seen.push({
        url: String(input),
        method: init?.method ?? "GET",
        body: typeof init?.body === "string" ? init.body : "",
        cookie: headers.get("cookie"),
        type: headers.get("content-type"),
      });
      return fetch(input, init);
    };
    assert.equal((await client({ fetch: spy, baseUrl: `${cepUrl}/` }).fetchCep(query({ amountMxn: "17250" }))).kind, "found");
    assert.equal(seen.length, 2);
    assert.equal(seen[0]!.url, `${cepUrl}/valida.do`);
    assert.equal(seen[0]!.method, "POST");
    assert.equal(seen[0]!.type, "application/x-www-form-urlencoded");
    assert.deepEqual(Object.fromEntries(new URLSearchParams(seen[0]!.body)), {
      tipoCriterio: "T",
      fecha: "10-03-2026",
      criterio: "MBAN01002603100012345678",
      emisor: "40012",
      receptor: "90723",
      cuenta: SELLER_CLABE,
      receptorParticipante: "0",
      monto: "17250.00",
      captcha: "c",
      tipoConsulta: "1",
    });
    assert.equal(seen[1]!.url, `${cepUrl}/descarga.do?formato=XML`);
    assert.match(seen[1]!.cookie ?? "", /^JSESSIONID=[^;]+$/);
  });

  test("PDF and ZIP can be downloaded in the same session", async () => {
    record();
    const res = await fetch(`${cepUrl}/valida.do`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "tipoCriterio=T&fecha=10-03-2026&criterio=MBAN01002603100012345678&emisor=40012&receptor=90723&cuenta=723969000011000077&receptorParticipante=0&monto=17250&captcha=c&tipoConsulta=1",
    });
    assert.equal(classifyPortalPage(await res.text()), "download_links");
    const cookie = (res.headers.getSetCookie()[0] ?? "").split(";")[0]!;
    const pdf = await fetch(`${cepUrl}/descarga.do?formato=PDF`, { headers: { cookie } });
    assert.equal(pdf.headers.get("content-type"), "application/pdf");
    assert.equal(pdf.headers.get("content-disposition"), "attachment; filename=CEP-20260310-MBAN01002603100012345678.pdf");
    assert.equal(Buffer.from(await pdf.arrayBuffer()).subarray(0, 5).toString(), "%PDF-");
    const zip = await fetch(`${cepUrl}/descarga.do?formato=ZIP`, { headers: { cookie } });
    const zipBytes = Buffer.from(await zip.arrayBuffer());
    assert.equal(zipBytes.readUInt32LE(0), 0x04034b50);
    assert.ok(zipBytes.includes(Buffer.from("CEP-20260310-MBAN01002603100012345678.xml")));
  });

  test("the simulator also works behind a host app that already parses form bodies", async () => {
    const app = new Koa();
    app.use(bodyParser());
    const root = new Router();
    root.use("/sim", sim.router.routes());
    app.use(root.routes());
    const server = await listen(app.callback());
    try {
      record();
      assert.equal((await client({ baseUrl: `${server.baseUrl}/sim` }).fetchCep(query())).kind, "found");
    } finally {
      await server.close();
    }
  });
});

describe("CEP portal client failure handling", () => {
  test("timeout: a portal that never answers is unavailable within the deadline", async () => {
    const hanging = await listen(() => {
      /* never respond */
    });
    try {
      const started = Date.now();
      const result = await client({ baseUrl: hanging.baseUrl, timeoutMs: 200 }).fetchCep(query());
      assert.equal(result.kind, "unavailable");
      assert.ok(result.kind === "unavailable" && result.reason.includes("timeout"));
      assert.ok(Date.now() - started < 2000);
    } finally {
      await hanging.close();
    }
  });

  test("timeout also covers a download that hangs after a successful query", async () => {
    const server = await listen((req, res) => {
      if (req.url?.startsWith("/valida.do")) {
        res.writeHead(200, { "content-type": "text/html; charset=UTF-8", "set-cookie": "JSESSIONID=abc!1; path=/; HttpOnly" });
        res.end('<a href="descarga.do?formato=XML">XML</a>');
      }
    });
    try {
      const result = await client({ baseUrl: server.baseUrl, timeoutMs: 300 }).fetchCep(query());
      assert.ok(result.kind === "unavailable" && result.reason.includes("timeout") && result.reason.includes("descarga.do"));
    } finally {
      await server.close();
    }
  });

  test("HTTP 429 with Retry-After is rate_limited with the delay", async () => {
    const server = await listen((_req, res) => {
      res.writeHead(429, { "retry-after": "120" });
      res.end();
    });
    try {
      assert.deepEqual(await client({ baseUrl: server.baseUrl }).fetchCep(query()), { kind: "rate_limited", retryAfterSeconds: 120 });
    } finally {
      await server.close();
    }
  });

  test("the captcha error on valida.do is rate limiting", async () => {
    const server = await listen((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=UTF-8" });
      res.end(
        '<div class="info"><p>La imagen de seguridad no fue ingresada correctamente. Favor de validar.</p></div><input type="hidden" name="varHideCaptcha" value="false"/>',
      );
    });
    try {
      assert.deepEqual(await client({ baseUrl: server.baseUrl }).fetchCep(query()), { kind: "rate_limited" });
    } finally {
      await server.close();
    }
  });

  test("an unexpected page or a network error is unavailable", async () => {
    const server = await listen((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body>Sitio en mantenimiento</body></html>");
    });
    const unexpected = await client({ baseUrl: server.baseUrl }).fetchCep(query());
    await server.close();
    assert.ok(unexpected.kind === "unavailable" && unexpected.reason.includes("unexpected page"));
    const refused = await client({ baseUrl: server.baseUrl }).fetchCep(query()); // port now closed
    assert.ok(refused.kind === "unavailable" && refused.reason.startsWith("network error"));
  });

  test("a malformed query is a CepQueryError, not a portal answer", async () => {
    const c = client();
    await assert.rejects(c.fetchCep(query({ operationDate: "10-03-2026" })), CepQueryError);
    await assert.rejects(c.fetchCep(query({ senderBankCode: "012" })), CepQueryError);
    await assert.rejects(c.fetchCep(query({ amountMxn: "12.345" })), CepQueryError);
    await assert.rejects(c.fetchCep(query({ trackingKey: "abc def" })), CepQueryError);
  });
});

describe("classifyPortalPage", () => {
  test("recognises the portal's answers, with entities, accents or Latin-1", () => {
    const notFoundBox =
      '<!-- <div>old</div> --><div class="info"><center><strong>Lo sentimos, por el momento no es posible generar el CEP. Operaci\u00f3n no encontrada. El SPEI no ha recibido una orden de pago que cumpla con el criterio de b\u00fasqueda especificado.</strong></center></div>';
    assert.equal(classifyPortalPage(notFoundBox), "not_found");
    assert.equal(classifyPortalPage("[BE] No se encontr&oacute; ning&uacute;n pago con la informaci&oacute;n proporcionada."), "not_found");
    assert.equal(
      classifyPortalPage("<strong>Lo sentimos, por el momento no es posible generar el CEP. Con la informaci&#243;n proporcionada se identific&#xF3; el siguiente pago:</strong>"),
      "not_yet_available",
    );
    assert.equal(classifyPortalPage("<h1>Lo sentimos, pero ha excedido el n&uacute;mero m&aacute;ximo de consultas en este portal.</h1>"), "rate_limited");
    assert.equal(classifyPortalPage('<a href="descarga.do?formato=XML" class="boton">XML</a>'), "download_links");
    assert.equal(classifyPortalPage('<!-- <a href="descarga.do?formato=XML"> -->'), "unknown");
    assert.equal(classifyPortalPage("Intente nuevamente m\u00e1s tarde"), "temporary_error");
  });
});
