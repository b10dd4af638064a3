// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @notice Test-only malicious ERC-20: once armed, every balance move (transfer, transferFrom) calls
/// back into `target` with `data` and bubbles up any revert, so a missing reentrancy guard shows up as
/// a successful nested call and a present one as the guard's revert.
contract ReentrantToken is ERC20 {
    address public target;
    bytes public data;
    bool private _inHook;

    constructor() ERC20("Reentrant Token", "REENT") {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function arm(address target_, bytes calldata data_) external {
        target = target_;
        data = data_;
    }

    function disarm() external {
        target = address(0);
        delete data;
    }

    function _update(address from, address to, uint256 value) internal override {
        super._update(from, to, value);
        if (target != address(0) && from != address(0) && !_inHook) {
            _inHook = true;
            (bool ok, bytes memory ret) = target.call(data);
            _inHook = false;
            if (!ok) {
                assembly ("memory-safe") {
                    revert(add(ret, 0x20), mload(ret))
                }
            }
        }
    }
}
