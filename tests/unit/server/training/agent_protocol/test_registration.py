"""What `potato training register` prints and the package the server hands its agents (issue 19).

The address in the printed commands was a guess (http://<fqdn>:8000) for a server started on another
port; the install command pip-installed the released upstream Potato from the public index."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

import pytest

import potato
from potato.cli import server_python_check
from potato.errors import PotatoError
from potato.server.training.agent_protocol import wheel
from potato.server.training.agent_protocol.wheel import agent_too_old, version_tuple
from potato.server.training.address import Address, server_address
from potato.server.training.agent_protocol.registration import register_text


def test_the_address_is_the_flag_then_public_url_then_where_the_server_last_started() -> None:
    recorded = ("", "0.0.0.0", 8732)
    assert server_address("https://a.example/", "https://b.example", recorded, None, None, "vm.lab").url == \
        "https://a.example"
    assert server_address(None, "https://b.example/potato/", recorded, None, None, "vm.lab").url == \
        "https://b.example/potato"
    assert server_address(None, None, ("https://c.example", "0.0.0.0", 8732), None, None, "vm.lab").url == \
        "https://c.example"
    # The running server's --public-url wins over the config's (it may have been started with both).
    assert server_address(None, "https://b.example", ("https://c.example", "0.0.0.0", 8732), None, None,
                          "vm.lab").url == "https://c.example"
    # Started with -p 8732 --host 0.0.0.0: this machine's name and the port it serves on, not 8000.
    assert server_address(None, None, recorded, "127.0.0.1", 9000, "vm.lab") == Address("http://vm.lab:8732")
    assert server_address(None, None, ("", "10.0.0.5", 8001), None, None, "vm.lab") == Address("http://10.0.0.5:8001")
    assert server_address(None, None, ("", "::", 8001), None, None, "vm.lab").url == "http://vm.lab:8001"
    assert server_address(None, None, ("", "fd00::5", 8001), None, None, "vm.lab").url == "http://[fd00::5]:8001"
    # Never started: the config's host and port, else the defaults.
    assert server_address(None, None, None, "0.0.0.0", 8100, "vm.lab").url == "http://vm.lab:8100"


def test_a_loopback_server_gets_a_note_with_the_fix() -> None:
    address = server_address(None, None, ("", "127.0.0.1", 8732), None, None, "vm.lab")
    assert address.url == "http://127.0.0.1:8732"
    assert address.note is not None and "listens on 127.0.0.1 only" in address.note
    assert "--host 0.0.0.0" in address.note and "server.public_url" in address.note
    assert "not been started yet" in (server_address(None, None, None, None, None, "vm.lab").note or "")


def test_register_prints_the_tutorials_layout_with_the_install_command_first() -> None:
    text = register_text("lab-workstation", "TOKEN", Address("https://annotate.example.org"), "train-text")
    wheel = f"potato_annotation-{potato.__version__}-py3-none-any.whl"
    assert text.splitlines() == [
        "Token for backend 'lab-workstation' (shown once; registering again replaces it):",
        "",
        "  TOKEN",
        "",
        "On the training machine:",
        "",
        f'  pip install "potato-annotation[train-text] @ https://annotate.example.org/training/agent/v1/package/{wheel}"',
        "  export POTATO_TRAINING_TOKEN=TOKEN",
        "  potato training agent --server https://annotate.example.org --backend lab-workstation",
    ]
    noted = register_text("lab", "T", Address("http://127.0.0.1:8000", "note: fix it"), None)
    assert noted.endswith('-py3-none-any.whl"\n  export POTATO_TRAINING_TOKEN=T\n'
                          "  potato training agent --server http://127.0.0.1:8000 --backend lab\n\nnote: fix it")


def test_an_agent_older_than_the_protocol_serves_is_told_the_command_that_updates_it() -> None:
    assert version_tuple("2.14.0") == (2, 14, 0)
    assert version_tuple("2.15.0rc1") == (2, 15, 0)
    assert version_tuple("2.14.dev3") == (2, 14)
    assert version_tuple("unknown") == ()
    assert agent_too_old(potato.__version__, "http://s:8000/") is None
    assert agent_too_old("99.0.0", "http://s:8000/") is None
    assert agent_too_old(None, "http://s:8000/") is None  # someone's own agent: the protocol is documented
    assert agent_too_old("my-agent", "http://s:8000/") is None
    message = agent_too_old("2.12.1", "http://s:8000/")
    assert message == (
        f"This agent is Potato 2.12.1; this server runs Potato {potato.__version__} and needs an agent of 2.14.0 or "
        f'newer. Update it on the training machine with `pip install "potato-annotation @ http://s:8000/training/'
        f'agent/v1/package/potato_annotation-{potato.__version__}-py3-none-any.whl"`, then start the agent again.')


def test_the_served_wheel_is_this_potato_whole_and_the_same_bytes_every_time() -> None:
    data = wheel.build_wheel()
    assert data == wheel.build_wheel()  # every gunicorn worker serves the same file
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    info = f"potato_annotation-{potato.__version__}.dist-info"
    for needed in ("potato/__init__.py", "potato/cli.py", "potato/training/agent/program.py", "potato/training/worker/program.py",
                   "potato/training/trainers/sklearn_text.py", "potato/training/trainers/hf_text.py",
                   "potato/server/templates/annotate.html", "potato/server/static/annotate.js",
                   f"{info}/METADATA", f"{info}/WHEEL", f"{info}/entry_points.txt", f"{info}/RECORD"):
        assert needed in names, needed
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    archive = zipfile.ZipFile(io.BytesIO(data))
    meta = archive.read(f"{info}/METADATA").decode()
    assert f"\nVersion: {potato.__version__}\n" in meta and "\nName: potato-annotation\n" in meta
    assert "potato = potato.cli:main" in archive.read(f"{info}/entry_points.txt").decode()
    # RECORD is right: pip and auditors check it.
    for line in archive.read(f"{info}/RECORD").decode().splitlines():
        name, digest, size = line.split(",")
        if name.endswith("RECORD"):
            continue
        body = archive.read(name)
        assert int(size) == len(body)
        assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
    src = Path(potato.__file__).parent
    assert archive.read("potato/training/agent/program.py") == (src / "training" / "agent" / "program.py").read_bytes()


def test_the_server_refuses_to_start_on_python_3_8_and_says_which_it_needs() -> None:
    server_python_check((3, 9, 0))
    with pytest.raises(PotatoError) as info:
        server_python_check((3, 8, 18))
    assert str(info.value) == (
        "The annotation server needs Python 3.9 or newer; this is Python 3.8.18. Install Potato under Python 3.9+ "
        "for `potato start` (python3.9 -m pip install 'potato-annotation[server]'). On this Python, `potato training "
        "agent` and the training worker run as they are.")
