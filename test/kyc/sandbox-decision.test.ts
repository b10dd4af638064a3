// Deciding a session in sandbox: POST /sandbox/kyc/:sessionId/decision, and the simulator's hosted page in a browser's way.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { startTestService, type TestService } from "../support/service.ts";
import { assertError, createUser, sandboxDecide, servicePartner, startSession, userDetail } from "./helpers.ts";

let service: TestService;
let key: string;
/** The partner's page the user's browser comes back to after verification. */
let returnPage: { server: Server; url: string; hits: string[] };

before(async () => {
  service = await startTestService();
  key = (await servicePartner(service, { tier: "GROWTH" })).key;
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? "");
    res.writeHead(200, { "Content-Type": "text/html" }).end("<p>Thanks, back at the partner</p>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  returnPage = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
});
after(async () => {
  returnPage.server.closeAllConnections();
  await new Promise<void>((resolve) => returnPage.server.close(() => resolve()));
  await service.close();
});

describe("POST /sandbox/kyc/:sessionId/decision", () => {
  test("APPROVED answers 200 with the user detail after the callback was applied", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "FULL");
    const response = await sandboxDecide(service, key, sessionId, "APPROVED");
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal(response.body.partnerUserRef, ref);
    assert.equal(response.body.kycStatus, "APPROVED");
    assert.equal(response.body.kycTier, "FULL");
    assert.deepEqual(await userDetail(service, key, ref), response.body);
  });

  test("REJECTED answers 200 with the user REJECTED", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "BASIC");
    const response = await sandboxDecide(service, key, sessionId, "REJECTED");
    assert.equal(response.status, 200);
    assert.equal(response.body.kycStatus, "REJECTED");
  });

  test("isPep: true reaches the user through the provider's screening", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref, "BASIC");
    const response = await sandboxDecide(service, key, sessionId, "APPROVED", { isPep: true });
    assert.equal(response.body.isPep, true);
  });

  test("another partner's session is NOT_FOUND and stays undecided", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref);
    const other = await servicePartner(service);
    assertError(await sandboxDecide(service, other.key, sessionId, "APPROVED"), 404, "NOT_FOUND");
    assert.equal((await userDetail(service, key, ref)).kycStatus, "PENDING");
  });

  test("an unknown session is NOT_FOUND", async () => {
    assertError(await sandboxDecide(service, key, "00000000-0000-4000-8000-000000000000", "APPROVED"), 404, "NOT_FOUND");
  });

  test("a session already decided is 409 INVALID_STATE and keeps its decision", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref);
    const approved = (await sandboxDecide(service, key, sessionId, "APPROVED")).body;
    assertError(await sandboxDecide(service, key, sessionId, "REJECTED"), 409, "INVALID_STATE");
    assert.deepEqual(await userDetail(service, key, ref), approved);
  });

  test("a result other than APPROVED or REJECTED is VALIDATION_ERROR and decides nothing", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref);
    assertError(await sandboxDecide(service, key, sessionId, "PENDING" as "APPROVED"), 400, "VALIDATION_ERROR");
    assert.equal((await userDetail(service, key, ref)).kycStatus, "PENDING");
  });

  test("needs the partner's API key", async () => {
    const ref = await createUser(service, key);
    const { sessionId } = await startSession(service, key, ref);
    const response = await service.api("POST", `/sandbox/kyc/${sessionId}/decision`, { body: { result: "APPROVED" } });
    assertError(response, 401, "MISSING_API_KEY");
  });
});

describe("the simulator's hosted page", () => {
  /** Opens the session page, submits its form as a browser does, and returns the redirect. */
  async function submitPage(sessionUrl: string, fields: Record<string, string>): Promise<Response> {
    const page = await fetch(sessionUrl);
    assert.equal(page.status, 200);
    const html = await page.text();
    const action = /<form method="post" action="([^"]+)">/.exec(html)?.[1];
    assert.ok(action, "the page has a form");
    return fetch(new URL(action, sessionUrl), {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
      redirect: "manual",
    });
  }

  test("Approve sends the signed decision and redirects (303) the browser to returnUrl", async () => {
    const ref = await createUser(service, key);
    const returnUrl = `${returnPage.url}/kyc/done?user=${ref}`;
    const { sessionUrl } = await startSession(service, key, ref, "BASIC", returnUrl);
    const submitted = await submitPage(sessionUrl, { decision: "approve" });
    assert.equal(submitted.status, 303);
    assert.equal(submitted.headers.get("location"), returnUrl);
    const back = await fetch(submitted.headers.get("location")!);
    assert.equal(back.status, 200);
    assert.ok(returnPage.hits.includes(`/kyc/done?user=${ref}`));
    const user = await userDetail(service, key, ref);
    assert.equal(user.kycStatus, "APPROVED");
    assert.equal(user.kycTier, "BASIC");
  });

  test("Reject sends the signed decision and redirects the browser to returnUrl", async () => {
    const ref = await createUser(service, key);
    const returnUrl = `${returnPage.url}/kyc/done?user=${ref}`;
    const { sessionUrl } = await startSession(service, key, ref, "FULL", returnUrl);
    const submitted = await submitPage(sessionUrl, { decision: "reject" });
    assert.equal(submitted.status, 303);
    assert.equal(submitted.headers.get("location"), returnUrl);
    assert.equal((await userDetail(service, key, ref)).kycStatus, "REJECTED");
  });

  test("the PEP box reaches the user as isPep", async () => {
    const ref = await createUser(service, key);
    const { sessionUrl } = await startSession(service, key, ref, "FULL", `${returnPage.url}/kyc/done`);
    const submitted = await submitPage(sessionUrl, { pep: "1", decision: "approve" });
    assert.equal(submitted.status, 303);
    assert.equal((await userDetail(service, key, ref)).isPep, true);
  });
});
