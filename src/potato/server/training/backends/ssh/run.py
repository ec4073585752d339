"""One run on an ssh backend: the steps only a plain ssh host has (its GPUs, the packages venv, a
container), over the skeleton every run the server drives over ssh shares
(:class:`~potato.server.training.backends.ssh.remoterun.RemoteRun`).
"""

from __future__ import annotations

from typing import Any

from potato.config.schema import SshBackendSettings
from potato.defaults import SSH_STEP_TIMEOUT_S, SSH_VENV_TIMEOUT_S
from potato.server.training.backends.ssh import lines
from potato.server.training.backends.ssh.remoterun import RemoteRun
from potato.server.training.backends.ssh.command import SshFailed, SshStep
from potato.server.training.backends.ssh.host import HostFacts, gpus_unknown_error, venv_key
from potato.training.gpus.nvidia import choose_gpus

VENV_CHECK_STEP = SshStep("looking for the packages venv", SSH_STEP_TIMEOUT_S)
VENV_STEP = SshStep("installing the backend's packages", SSH_VENV_TIMEOUT_S,
                 "pip's output so far is not kept; install them by hand there once (python -m pip install ...) "
                 "and see where pip waits, or give the host's Python the packages and drop `packages`")


class SshRun(RemoteRun[SshBackendSettings]):
    """One run on an ssh backend: the agent starts the worker on the host itself."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gpu_env: dict[str, str] = {}
        """The agent's CUDA settings for the GPUs :meth:`before_code` chose."""

    def reads_gpus(self) -> bool:
        return self.backend.gpus != "none"

    def python_line(self, facts: HostFacts) -> str:
        return f"Python {facts.python_version} on {self.backend.host} ({facts.python_path})"

    def before_code(self, facts: HostFacts) -> None:
        """The run's GPUs, a broken NVRTC before the run reaches a JIT-compiled op, the packages venv."""
        host, b = self.backend.host, self.backend
        if facts.gpus_unknown:
            raise SshFailed(gpus_unknown_error(facts.gpus_unknown, b.gpus))
        choice = choose_gpus(facts.gpus, b.gpus, b.min_free_gpu_mb, facts.no_kernels)
        self.say(f"This run gets {choice.text} on {host}")
        if choice.cuda_visible_devices and facts.nvrtc_error and b.container is None:
            raise SshFailed(facts.nvrtc_error)  # now, not when the run reaches a JIT-compiled op
        if b.packages:
            self.python = self.ensure_venv(facts.python_path)
        self.store.update(self.run.id, device=choice.text)
        self.gpu_env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID",  # CUDA's indices are then nvidia-smi's, as chosen
                        "CUDA_VISIBLE_DEVICES": choice.cuda_visible_devices}

    def agent_setup(self) -> tuple[dict[str, str], list[str]]:
        """The agent's environment for the run and its arguments beyond the run's own."""
        box = self.backend.container
        if box:
            self.say(f"The worker runs in {box.runtime} image {box.image} on {self.backend.host}")
        return self.gpu_env, lines.container_args(box)

    def ensure_venv(self, python_path: str) -> str:
        """A venv with the host's packages visible (``--system-site-packages``: its CUDA torch
        stays) plus ``packages``, built once per (interpreter, packages) and reused; pip's output goes
        to run.log. Built under ``<hash>.tmp`` and renamed when complete, like the code."""
        b = self.backend
        key = venv_key(python_path, b.packages)
        venv = f"{self.remote_dir}/venvs/{key}"
        python = f"{venv}/bin/python"
        if self.ssh(lines.venv_built(venv), step=VENV_CHECK_STEP).returncode == 0:
            self.say(f"Packages {', '.join(b.packages)} on {b.host}: venv {b.remote_dir}/venvs/{key} (reused)")
            return python
        self.step(f"installing {', '.join(b.packages)} on {b.host}")
        command = lines.build_venv(self.remote_dir, venv, self.target.env_prefix(), python_path, b.packages)
        out = self.ssh(command + " 2>&1", step=VENV_STEP)
        output_lines = out.stdout.decode("utf-8", "replace").splitlines()
        for line in output_lines:
            if line.strip():
                self.say(f"pip: {line}")
        if out.returncode != 0:
            raise SshFailed(f"Installing {', '.join(b.packages)} on {b.host} failed (exit {out.returncode}): "
                            f"{(output_lines or ['no output'])[-1]}. run.log has pip's whole output.")
        self.say(f"Packages {', '.join(b.packages)} on {b.host}: venv {b.remote_dir}/venvs/{key} (built)")
        return python
