// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";

/// @title TestUSDC
/// @notice Sandbox stand-in for USDC: 6 decimals like the real token. NOT for production.
/// @dev `mint` is deliberately open to anyone: this token only exists on local and test chains, where
/// the sandbox funds seller wallets with it and tests mint freely. Production uses the real USDC
/// address (`USDC_ADDRESS`) and never deploys this contract.
contract TestUSDC is ERC20, ERC20Permit {
    constructor() ERC20("Test USD Coin", "USDC") ERC20Permit("Test USD Coin") {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice Creates `amount` token units for `to`. Open to anyone (sandbox faucet).
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
