import { createPublicClient, createWalletClient, defineChain, http, type Address, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { escrowAbi, escrowEip712Domain, escrowOrderStatus, orderTermsTypes } from "./escrow-abi.ts";

export interface ChainSettings {
  rpcUrl: string;
  chainId: number;
  escrowAddress: Address;
  usdcAddress: Address;
  servicePrivateKey: Hex;
  arbiterPrivateKey: Hex;
}

/** The terms the service signs and the seller's wallet submits with its deposit (EIP-712 `OrderTerms`). */
export interface OrderTerms {
  orderId: Hex;
  token: Address;
  amount: bigint;
  feeBps: number;
  feeRecipient: Address;
  treasuryShareBps: number;
  depositDeadline: bigint;
  listingWindow: bigint;
  lockWindow: bigint;
}

export type EscrowStatus = (typeof escrowOrderStatus)[number];

/** viem clients for the escrow: the service's signer, the arbiter, and reads. */
export function createEscrowGateway(settings: ChainSettings) {
  const chain = defineChain({
    id: settings.chainId,
    name: `chain-${settings.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [settings.rpcUrl] } },
  });
  const transport = http(settings.rpcUrl, { retryCount: 2 });
  const publicClient: PublicClient = createPublicClient({ chain, transport, pollingInterval: 250 });
  const service: PrivateKeyAccount = privateKeyToAccount(settings.servicePrivateKey);
  const arbiter: PrivateKeyAccount = privateKeyToAccount(settings.arbiterPrivateKey);
  const domain = { ...escrowEip712Domain, chainId: settings.chainId, verifyingContract: settings.escrowAddress } as const;

  return {
    chain,
    settings,
    publicClient,
    service,
    arbiter,
    walletClient: (account: PrivateKeyAccount) => createWalletClient({ account, chain, transport }),

    signTerms(terms: OrderTerms): Promise<Hex> {
      return service.signTypedData({ domain, types: orderTermsTypes, primaryType: "OrderTerms", message: terms });
    },

    async escrowStatus(orderId: Hex): Promise<EscrowStatus> {
      const order = await publicClient.readContract({ address: settings.escrowAddress, abi: escrowAbi, functionName: "getOrder", args: [orderId] });
      return escrowOrderStatus[Number((order as { status: number }).status)]!;
    },
  };
}

export type EscrowGateway = ReturnType<typeof createEscrowGateway>;
