"""What ``potato training register`` prints: the token and the commands for the training machine,
with this server's own Potato to install and the address agents reach it on (:mod:`..address`).
"""

from __future__ import annotations

from potato.server.training.address import Address
from potato.server.training.agent_protocol.wheel import agent_install_command


def register_text(backend: str, token: str, address: Address, extra: str | None) -> str:
    """The tutorial's layout, with the install command of this server's own Potato first."""
    lines = [
        f"Token for backend '{backend}' (shown once; registering again replaces it):",
        "",
        f"  {token}",
        "",
        "On the training machine:",
        "",
        f"  {agent_install_command(address.url, extra)}",
        f"  export POTATO_TRAINING_TOKEN={token}",
        f"  potato training agent --server {address.url} --backend {backend}",
    ]
    if address.note:
        lines += ["", address.note]
    return "\n".join(lines)
