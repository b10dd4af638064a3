import { BlockNotFoundError, createPublicClient, createWalletClient, defineChain, domainSeparator, hexToBytes, TransactionReceiptNotFoundError, type Address, type Hash, type Hex, type PublicClient, type TransactionReceipt } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { escrowAbi, escrowEip712Domain, escrowOrderStatus, lockPermitTypes, orderTermsTypes } from "./escrow-abi.ts";
import { chainTransport, rpcEndpoints } from "./rpc-transport.ts";
import { localAccount, signDigest } from "./secp256k1.ts";
import { structHasher, typedDataDigester } from "./typed-data.ts";

export interface ChainSettings {
  /** One or more JSON-RPC endpoints, comma-separated (rpc-transport.ts). */
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

/**
 * The service's admission of one buyer wallet to lock one order (EIP-712 `LockPermit`, types in
 * escrow-abi.ts `lockPermitTypes`): the buyer's wallet passes it with the signature to the escrow's
 * `lock(permit, signature)`, which accepts it only from `buyer`, until `deadline` (Unix seconds,
 * included), signed by a SERVICE_ROLE key.
 */
export interface LockPermit {
  orderId: Hex;
  buyer: Address;
  deadline: bigint;
}

const orderTermsHash = structHasher(orderTermsTypes, "OrderTerms");
const lockPermitHash = structHasher(lockPermitTypes, "LockPermit");

/** How long a lock permit stays valid (decisions 17: 2 minutes). */
export const LOCK_PERMIT_TTL_SECONDS = 120;

/** The deadline of a permit issued at `now`: now + LOCK_PERMIT_TTL_SECONDS, in Unix seconds. */
export function lockPermitDeadline(now: Date = new Date()): bigint {
  return BigInt(Math.floor(now.getTime() / 1000) + LOCK_PERMIT_TTL_SECONDS);
}

export type EscrowStatus = (typeof escrowOrderStatus)[number];

/** viem clients for the escrow: the service's signer, the arbiter, and reads. */
export function createEscrowGateway(settings: ChainSettings) {
  const chain = defineChain({
    id: settings.chainId,
    name: `chain-${settings.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: rpcEndpoints(settings.rpcUrl) } },
  });
  const transport = chainTransport(settings.rpcUrl);
  const publicClient: PublicClient = createPublicClient({ chain, transport, pollingInterval: 250 });
  // Their transactions are signed by libsecp256k1 (secp256k1.ts).
  const service: PrivateKeyAccount = localAccount(settings.servicePrivateKey);
  const arbiter: PrivateKeyAccount = localAccount(settings.arbiterPrivateKey);
  const domain = { ...escrowEip712Domain, chainId: settings.chainId, verifyingContract: settings.escrowAddress } as const;
  // The domain never changes: its separator is hashed once, and each signature hashes only its message
  // (typed-data.ts). viem's signTypedData validated and hashed the domain at every call, a third of a deposit
  // signature's CPU. Checked against signTypedData in test/chain/typed-signatures.test.ts.
  const digestOf = typedDataDigester(domainSeparator({ domain }));
  const serviceKey = hexToBytes(settings.servicePrivateKey);
  const signDigestOf = async (structHash: Uint8Array): Promise<Hex> => signDigest(digestOf(structHash), serviceKey);

  /** The escrow's status of an order and the buyer holding its lock (the zero address: none), at the latest block or at `blockNumber`. */
  const escrowOrder = async (orderId: Hex, blockNumber?: bigint): Promise<{ status: EscrowStatus; buyer: Address }> => {
    const order = await publicClient.readContract({ address: settings.escrowAddress, abi: escrowAbi, functionName: "getOrder", args: [orderId], ...(blockNumber === undefined ? {} : { blockNumber }) });
    return { status: escrowOrderStatus[Number(order.status)]!, buyer: order.buyer };
  };
  const escrowStatus = async (orderId: Hex, blockNumber?: bigint): Promise<EscrowStatus> => (await escrowOrder(orderId, blockNumber)).status;

  return {
    chain,
    settings,
    publicClient,
    service,
    arbiter,
    walletClient: (account: PrivateKeyAccount) => createWalletClient({ account, chain, transport }),

    signTerms(terms: OrderTerms): Promise<Hex> {
      return signDigestOf(orderTermsHash(terms));
    },

    /** The service's EIP-712 signature of a lock permit, in this escrow's domain. */
    signLockPermit(permit: LockPermit): Promise<Hex> {
      return signDigestOf(lockPermitHash(permit));
    },

    /** The escrow's effective lock expiry (Unix seconds; moved by pauses), or null when not Locked. */
    async lockExpiryOf(orderId: Hex): Promise<bigint | null> {
      const expiry = await publicClient.readContract({ address: settings.escrowAddress, abi: escrowAbi, functionName: "lockExpiryOf", args: [orderId] });
      return expiry === 0n ? null : expiry;
    },

    escrowOrder,
    escrowStatus,

    /**
     * The escrow's status of an order once the chain has closed its deposit window for good, or undefined
     * while a deposit could still be accepted or confirmed (decisions 6). The window is closed at the block
     * `confirmations` below the head when that block is later than `depositDeadline` (Unix seconds): the
     * escrow refuses a deposit after it, and no reorganisation within the confirmations can bring one back;
     * the status is read at that very block, so an endpoint lagging behind another cannot hide a deposit.
     * With no confirmations (the local chain, whose block clock follows the wall clock and which mines only
     * when a transaction comes) the wall clock past the deadline also closes it.
     */
    async depositOutcome(orderId: Hex, depositDeadline: bigint, confirmations: number): Promise<EscrowStatus | undefined> {
      const head = await publicClient.getBlock({ blockTag: "latest" });
      const at = head.number - BigInt(confirmations);
      if (at < 0n) return undefined;
      const block = confirmations === 0 ? head : await publicClient.getBlock({ blockNumber: at });
      const closed = block.timestamp > depositDeadline || (confirmations === 0 && Date.now() / 1000 > Number(depositDeadline));
      return closed ? escrowStatus(orderId, at) : undefined;
    },

    /** Every log the escrow emitted in blocks `fromBlock` to `toBlock` (included), decoded, in chain order. */
    async escrowLogs(fromBlock: bigint, toBlock: bigint) {
      const logs = await publicClient.getContractEvents({ address: settings.escrowAddress, abi: escrowAbi, fromBlock, toBlock });
      return logs.filter((log) => log.eventName !== undefined);
    },

    /** A block's time (Unix seconds). */
    async blockTimestamp(blockHash: Hex): Promise<bigint> {
      return (await publicClient.getBlock({ blockHash })).timestamp;
    },

    /** The hash of the canonical block `blockNumber`; undefined when the node has no such block (yet). */
    async blockHash(blockNumber: bigint): Promise<Hex | undefined> {
      return publicClient.getBlock({ blockNumber }).then(
        (block) => block.hash ?? undefined,
        (error: unknown) => {
          if (error instanceof BlockNotFoundError) return undefined;
          throw error;
        },
      );
    },

    /**
     * The transaction's receipt in the canonical chain, undefined when it has none. Only "not found" means
     * absent: any other failure to read the chain is thrown, never taken for a lost transaction.
     */
    async transactionReceipt(hash: Hash): Promise<TransactionReceipt | undefined> {
      return publicClient.getTransactionReceipt({ hash }).catch((error: unknown) => {
        if (error instanceof TransactionReceiptNotFoundError) return undefined;
        throw error;
      });
    },
  };
}

export type EscrowGateway = ReturnType<typeof createEscrowGateway>;
