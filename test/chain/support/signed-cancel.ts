import { encodeFunctionData, type Address, type Hex } from "viem";
import { escrowAbi } from "../../../src/chain/escrow-abi.ts";
import type { EscrowGateway } from "../../../src/chain/escrow-gateway.ts";

/**
 * The service key's signed `cancel` of an escrow order at `nonce`, not broadcast: what a crash between signing
 * and sending leaves. `gas` fixes its gas limit instead of estimating it (too little makes it revert when mined).
 */
export async function signedCancel(gateway: EscrowGateway, escrowAddress: Address, escrowOrderId: Hex, nonce: number, options: { gas?: bigint } = {}): Promise<Hex> {
  const wallet = gateway.walletClient(gateway.service);
  const request = await wallet.prepareTransactionRequest({
    to: escrowAddress,
    data: encodeFunctionData({ abi: escrowAbi, functionName: "cancel", args: [escrowOrderId] }),
    nonce,
    chain: gateway.chain,
    ...options,
  });
  return wallet.signTransaction(request);
}
