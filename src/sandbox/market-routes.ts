import { encodeFunctionData, formatEther, formatUnits, getAddress, parseEther, parseUnits, type Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { testUsdcAbi } from "../chain/escrow-abi.ts";
import type { EscrowGateway } from "../chain/escrow-gateway.ts";
import { sendFromWallet, waitUntilMined } from "../chain/wallet-sends.ts";
import { devAccounts, DEV_ACCOUNT } from "../stack/local-node.ts";
import type { Pool } from "../db/pool.ts";
import { InvalidStateError, KycSessionFailedError, NotFoundError } from "../domain/errors.ts";
import { money, USDC_DECIMALS } from "../domain/money.ts";
import type { RouteGroup } from "../http/routes.ts";
import { simulatedPaymentProperties, simulateSpeiPayment } from "./payment-routes.ts";
import type { CepPortalSimulator } from "./simulators/cep-portal.ts";
import { KycSimulatorError, type KycProviderSimulator } from "./simulators/kyc-provider.ts";
import { currentBuyer } from "../market/auth.ts";
import { isBuyerKycSession } from "../market/kyc.ts";
import { buyerProfile, type MarketRouteDeps } from "../market/routes.ts";
import { getTradeRow } from "../market/trades.ts";
import { buyerViewSchema } from "../market/market-schema.ts";

// Sandbox helpers for buyers and developers' own wallets (decisions 13 and 17), registered only when
// SANDBOX is on: the chain's coordinates, a faucet, the buyer's KYC decision and simulated SPEI transfer.

/**
 * `GET /api/v1/sandbox/chain` and `POST /api/v1/sandbox/faucet`: what a developer's wallet needs to
 * trade on the local chain. The faucet sends from the deployer development account (which holds no
 * role) under that wallet's signer lock, shared by every instance on the database, so concurrent calls,
 * on one instance or several, never race for a nonce.
 */
export function sandboxChainRoutes(api: RouteGroup, deps: { pool: Pool; gateway: EscrowGateway }): void {
  const { pool, gateway } = deps;
  const funderAccount = privateKeyToAccount(devAccounts[DEV_ACCOUNT.deployer].privateKey);

  api.add(
    {
      method: "get",
      path: "/sandbox/chain",
      tag: "Sandbox",
      summary: "The local chain: RPC URL, chain id, escrow and test USDC addresses",
      responses: { 200: { description: "{ rpcUrl, chainId, escrowAddress, usdcAddress }", schema: { type: "object", required: ["rpcUrl", "chainId", "escrowAddress", "usdcAddress"], properties: { rpcUrl: { type: "string" }, chainId: { type: "integer" }, escrowAddress: { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" }, usdcAddress: { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" } } } } },
    },
    async (ctx) => {
      const { rpcUrl, chainId, escrowAddress, usdcAddress } = gateway.settings;
      ctx.body = { rpcUrl, chainId, escrowAddress, usdcAddress };
    },
  );

  api.add<{ address: string; eth?: number; usdc?: number }>(
    {
      method: "post",
      path: "/sandbox/faucet",
      tag: "Sandbox",
      summary: "Funds any wallet on the local chain with ETH (default 1) and test USDC (default 1000)",
      body: {
        type: "object",
        additionalProperties: false,
        required: ["address"],
        properties: {
          address: { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" },
          eth: { type: "number", minimum: 0, maximum: 100, "x-maxDecimals": 18 },
          usdc: { type: "number", minimum: 0, maximum: 1_000_000_000, "x-maxDecimals": USDC_DECIMALS },
        },
      },
      responses: {
        200: {
          description: "{ address, ethTxHash, usdcTxHash, ethBalance, usdcBalance }",
          schema: {
            type: "object",
            required: ["address", "ethTxHash", "usdcTxHash", "ethBalance", "usdcBalance"],
            properties: { address: { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" }, ethTxHash: { anyOf: [{ type: "string", pattern: "^0x[0-9a-fA-F]{64}$" }, { type: "null" }] }, usdcTxHash: { anyOf: [{ type: "string", pattern: "^0x[0-9a-fA-F]{64}$" }, { type: "null" }] }, ethBalance: { type: "string" }, usdcBalance: { type: "string" } },
          },
        },
      },
      errors: ["VALIDATION_ERROR", "CHAIN_UNAVAILABLE"],
    },
    async (ctx, { body }) => {
      const address = getAddress(body.address) as Address;
      // Plain decimal text: String(1e-18) is "1e-18", which parseEther refuses (a 500 found by npm run fuzz).
      const eth = parseEther(money(body.eth ?? 1).toFixed());
      const usdc = parseUnits(money(body.usdc ?? 1000).toFixed(), USDC_DECIMALS);
      // Each send holds the lock only until the node has taken it (its nonce then counts); mining is awaited
      // outside. A send whose answer was lost and is repeated finds its transaction known, not a failure.
      const ethSent = eth > 0n ? await sendFromWallet({ pool, gateway }, funderAccount, { to: address, data: "0x", value: eth }) : null;
      const mint = encodeFunctionData({ abi: testUsdcAbi, functionName: "mint", args: [address, usdc] });
      const usdcSent = usdc > 0n ? await sendFromWallet({ pool, gateway }, funderAccount, { to: gateway.settings.usdcAddress, data: mint }) : null;
      const ethTxHash = ethSent && (await waitUntilMined(gateway, ethSent));
      const usdcTxHash = usdcSent && (await waitUntilMined(gateway, usdcSent));
      const [ethBalance, usdcBalance] = await Promise.all([
        gateway.publicClient.getBalance({ address }),
        gateway.publicClient.readContract({ address: gateway.settings.usdcAddress, abi: testUsdcAbi, functionName: "balanceOf", args: [address] }),
      ]);
      ctx.body = { address, ethTxHash, usdcTxHash, ethBalance: formatEther(ethBalance), usdcBalance: formatUnits(usdcBalance, USDC_DECIMALS) };
    },
  );
}

/** `POST /market/v1/sandbox/kyc/:sessionId/decision` and `POST /market/v1/sandbox/trades/:escrowOrderId/spei` (decisions 17). */
export function marketSandboxRoutes(
  market: RouteGroup,
  deps: Pick<MarketRouteDeps, "pool" | "policy" | "indexerSchema"> & { kyc: Pick<KycProviderSimulator, "decide"> | undefined; cep: CepPortalSimulator | undefined },
): void {
  const pool: Pool = deps.pool;
  if (deps.kyc) {
    const kyc = deps.kyc;
    market.add<{ result: "APPROVED" | "REJECTED"; isPep?: boolean; name?: string; curp?: string; rfc?: string }>(
      {
        method: "post",
        path: "/sandbox/kyc/:sessionId/decision",
        tag: "Sandbox",
        summary: "Sandbox: the simulated KYC provider decides one of the buyer's own sessions",
        description:
          "Optional `name`, `curp` and `rfc`: the identity the provider verified (generated when absent; the CURP and RFC only at FULL). " +
          "The service keeps it with the buyer and compares the payer of each SPEI payment with it.",
        body: {
          type: "object",
          additionalProperties: false,
          required: ["result"],
          properties: {
            result: { enum: ["APPROVED", "REJECTED"] },
            isPep: { type: "boolean" },
            name: { type: "string", minLength: 1, maxLength: 120 },
            curp: { type: "string", pattern: "^[A-Za-z]{4}\\d{6}[HMXhmx][A-Za-z]{5}[A-Za-z0-9]\\d$" },
            rfc: { type: "string", pattern: "^[A-Za-z&Ññ]{3,4}\\d{6}[A-Za-z0-9]{3}$" },
          },
        },
        responses: { 200: { description: "The buyer (as GET /me) once the decision was applied", schema: buyerViewSchema } },
        errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE", "KYC_SESSION_FAILED"],
      },
      async (ctx, { body, params }) => {
        const wallet = currentBuyer(ctx);
        if (!(await isBuyerKycSession(pool, wallet, params.sessionId!))) throw new NotFoundError("No KYC session of this buyer with this id");
        try {
          const identity = { ...(body.name ? { name: body.name } : {}), ...(body.curp ? { curp: body.curp.toUpperCase() } : {}), ...(body.rfc ? { rfc: body.rfc.toUpperCase() } : {}) };
          await kyc.decide(params.sessionId!, body.result, { ...(body.isPep === undefined ? {} : { isPep: body.isPep }), identity });
        } catch (error) {
          if (!(error instanceof KycSimulatorError)) throw error;
          if (error.code === "SESSION_NOT_FOUND") throw new NotFoundError("The simulated provider has no session with this id");
          if (error.code === "SESSION_ALREADY_DECIDED") throw new InvalidStateError("The KYC session is already decided");
          throw new KycSessionFailedError("The simulated provider could not deliver its decision to the service");
        }
        ctx.body = await buyerProfile(deps, wallet);
      },
    );
  }
  if (deps.cep) {
    const cep = deps.cep;
    market.add<{ amountMxn?: number; concept?: string; payerName?: string; payerRfc?: string }>(
      {
        method: "post",
        path: "/sandbox/trades/:escrowOrderId/spei",
        tag: "Sandbox",
        summary: "Sandbox: simulates the buyer's SPEI transfer to the seller's CLABE (not reported)",
        description:
          "Optional `amountMxn` (default totalMxn), `concept` (default the order's payment concept; \"\" for none), `payerName` and `payerRfc` " +
          "(default the buyer's own verified identity; another's simulates a third-party payment, held for review). Report it with POST /trades/:escrowOrderId/payment.",
        body: {
          type: "object",
          additionalProperties: false,
          properties: {
            amountMxn: simulatedPaymentProperties.amountMxn,
            concept: simulatedPaymentProperties.concept,
            payerName: simulatedPaymentProperties.payerName,
            payerRfc: simulatedPaymentProperties.payerRfc,
          },
        },
        responses: {
          200: {
            description: "{ trackingKey, operationDate, senderBankCode, amountMxn, concept }",
            schema: {
              type: "object",
              required: ["trackingKey", "operationDate", "senderBankCode", "amountMxn", "concept"],
              properties: { trackingKey: { type: "string" }, operationDate: { type: "string", format: "date" }, senderBankCode: { type: "string" }, amountMxn: { type: "number" }, concept: { type: "string" } },
            },
          },
        },
        errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE"],
      },
      async (ctx, { body, params }) => {
        const row = await getTradeRow(pool, currentBuyer(ctx), params.escrowOrderId!);
        if (row.status !== "LOCKED") throw new InvalidStateError(`The trade is ${row.status}; this action needs LOCKED`);
        const paid = await simulateSpeiPayment(pool, cep, row, body);
        ctx.body = { trackingKey: paid.trackingKey, operationDate: paid.operationDate, senderBankCode: paid.sender.code, amountMxn: Number(paid.amountMxn), concept: paid.concept };
      },
    );
  }
}
