"""Code that runs on a training host must run on Python 3.8 with the standard library only (R14).

Two lists:

- REMOTE_SAFE: the whole ``potato.training`` package (found on disk, so a new module is checked
  the day it is added) and the three parent modules it imports. Every import, anywhere in the module, is the standard library or another
  remote-safe module, except an optional one inside ``try: ... except ImportError`` (the
  device probe's torch).
- LAZY_HEAVY: trainers; their module level imports only the standard library and remote-safe
  modules (so the worker can import them to report E4), heavy packages only inside functions.

Both must parse as Python 3.8 and avoid the 3.9+ features a 3.8 parser does not reject.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from potato.server.training.backends.ssh.codepush import code_archive, code_hash, shipped_files
from potato.training.launch.codefiles import PRESENT_MARK

SRC = Path(__file__).resolve().parents[3] / "src"

LAZY_HEAVY = [
    "potato/training/gpus/dataparallel.py",  # torch only in the functions a rank calls
    "potato/training/trainers/sklearn_text.py",
    "potato/training/trainers/sklearn_tokens.py",
    "potato/training/trainers/hf_text.py",
    "potato/training/trainers/hf_tokens.py",
    "potato/training/trainers/llm_zero_shot.py",
    "potato/training/trainers/hf_llm.py",
    "potato/training/trainers/hf_llm_preference.py",
    "potato/training/trainers/llm_memory.py",  # transformers and torch only in the functions that load
    "potato/training/trainers/hub_download.py",
]

REMOTE_SAFE = [path for path in shipped_files(SRC) if path not in LAZY_HEAVY]
"""Everything that ships to a training host (the list the code push uses) except the trainers
that import heavy packages lazily."""

NOT_IN_38 = {"zoneinfo", "graphlib", "tomllib", "_zoneinfo", "_tomllib"}
"""Standard-library modules newer than Python 3.8."""

NEW_ATTRIBUTES = {
    "removeprefix", "removesuffix",  # str, 3.9
    "is_relative_to", "with_stem", "readlink", "hardlink_to",  # pathlib, 3.9-3.10
    "bit_count",  # int, 3.10
    "pairwise",  # itertools, 3.10
    "to_thread",  # asyncio, 3.9
    "randbytes",  # random, 3.9
    "cache",  # functools.cache, 3.9
}
"""Attribute names that exist only from Python 3.9 on (as used in call position)."""

NEW_KEYWORDS = {"kw_only", "slots", "strict"}
"""Keyword arguments new in 3.10 (dataclass(kw_only=, slots=), zip(strict=))."""

BUILTIN_GENERICS = {"list", "dict", "tuple", "set", "frozenset", "type"}


def module_name(path: str) -> str:
    return path[:-3].replace("/", ".").replace(".__init__", "")


REMOTE_MODULES = {module_name(p) for p in REMOTE_SAFE}


def parse(path: str) -> ast.Module:
    return ast.parse((SRC / path).read_text(encoding="utf-8"), filename=path, feature_version=(3, 8))


def annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes inside annotations (safe under ``from __future__ import annotations``)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        roots: list[ast.AST] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.returns is not None:
                roots.append(node.returns)
            args = node.args
            for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if a is not None and a.annotation is not None:
                    roots.append(a.annotation)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        for root in roots:
            inside.update(id(n) for n in ast.walk(root))
    return inside


def optional_imports(tree: ast.AST) -> set[int]:
    """ids of imports inside ``try: ... except ImportError`` (code that works without the package)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h.type) for h in node.handlers):
            for stmt in node.body:
                guarded.update(id(n) for n in ast.walk(stmt))
    return guarded


def _catches_import_error(expr: object) -> bool:
    names = expr.elts if isinstance(expr, ast.Tuple) else [expr]
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names)


def imports(tree: ast.AST, top_level_only: bool) -> Iterator[str]:
    """Modules imported (top level only, or anywhere), leaving out optional imports."""
    nodes = tree.body if top_level_only else list(ast.walk(tree))  # type: ignore[attr-defined]
    guarded = optional_imports(tree)
    for node in nodes:
        if id(node) in guarded:
            continue
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` blocks never run
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def is_allowed(module: str) -> bool:
    top = module.split(".", 1)[0]
    if top == "potato":  # a lazy module's own top level is held to the standard library (below)
        return module in REMOTE_MODULES or module in LAZY_MODULES
    return top in sys.stdlib_module_names and top not in NOT_IN_38


TYPE_NAMES = {"int", "str", "float", "bool", "bytes", "list", "dict", "tuple", "set", "frozenset", "type"}


def _is_type_operand(node: ast.AST) -> bool:
    """``None`` or a builtin type name: an operand of ``|`` that makes a union, not a bitwise or."""
    if isinstance(node, ast.Constant) and node.value is None:
        return True
    return isinstance(node, ast.Name) and node.id in TYPE_NAMES


def py38_problems(path: str) -> list[str]:
    tree = parse(path)
    problems = []
    has_future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                     and any(a.name == "annotations" for a in n.names) for n in tree.body)
    # Annotations are never evaluated under the __future__ import, so only then may they use list[str].
    in_annotation = annotation_nodes(tree) if has_future else set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Subscript) and id(node) not in in_annotation
                and isinstance(node.value, ast.Name) and node.value.id in BUILTIN_GENERICS):
            problems.append(f"line {node.lineno}: {node.value.id}[...] at runtime needs Python 3.9")
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in NEW_ATTRIBUTES:
                problems.append(f"line {node.lineno}: .{node.func.attr}() needs Python 3.9+")
            for kw in node.keywords:
                if kw.arg in NEW_KEYWORDS:
                    problems.append(f"line {node.lineno}: keyword {kw.arg}= needs Python 3.10")
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and id(node) not in in_annotation
                and any(_is_type_operand(side) for side in (node.left, node.right))):
            problems.append(f"line {node.lineno}: X | Y of types at runtime needs Python 3.10")
    return problems


@pytest.mark.parametrize("path", REMOTE_SAFE + LAZY_HEAVY)
def test_parses_as_python_38(path: str) -> None:
    assert py38_problems(path) == []


@pytest.mark.parametrize("path", REMOTE_SAFE)
def test_remote_safe_imports_only_the_standard_library(path: str) -> None:
    bad = [m for m in imports(parse(path), top_level_only=False) if not is_allowed(m)]
    assert bad == [], f"{path} imports {bad}; remote code may import the standard library only"


LAZY_MODULES = {path[:-3].replace("/", ".") for path in LAZY_HEAVY}
"""A trainer may build on another (hf-token-classification on hf-text-classification): the other's
own module level is held to the same rule, so importing it imports nothing heavy either."""


@pytest.mark.parametrize("path", LAZY_HEAVY)
def test_trainer_modules_import_heavy_packages_lazily(path: str) -> None:
    bad = [m for m in imports(parse(path), top_level_only=True) if not is_allowed(m) and m not in LAZY_MODULES]
    assert bad == [], f"{path} imports {bad} at module level; import them inside the functions that use them"


def test_the_shipped_package_holds_the_agent_and_the_worker() -> None:
    for module in ("agent/__main__", "agent/program", "worker/__main__", "worker/program", "agent/protocol",
                   "launch/supervise", "job/archive", "job/files", "job/events"):
        assert f"potato/training/{module}.py" in REMOTE_SAFE
    assert not any(p.startswith("potato/server/") for p in REMOTE_SAFE)


def test_the_mark_of_a_whole_copy_is_a_file_that_ships() -> None:
    """The ssh probe and a hand-started SLURM agent take a copy of the code as there when this file
    is in it: a mark that no longer ships would copy the code on every run."""
    assert "/".join(PRESENT_MARK) in shipped_files(SRC)


def python38() -> str | None:
    """A real Python 3.8, where this machine has one (pyenv's, or on PATH)."""
    import shutil

    for candidate in (shutil.which("python3.8"), str(Path.home() / ".pyenv/versions/3.8.18/bin/python3.8")):
        if candidate and Path(candidate).exists():
            try:
                out = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                                     capture_output=True, text=True, timeout=30)
            except OSError:
                continue
            if out.returncode == 0 and out.stdout.strip() == "(3, 8)":
                return candidate
    return None


def test_the_shipped_package_runs_under_a_real_python_38(tmp_path: Path) -> None:
    """Import every shipped module and start the agent's and the worker's entry points under 3.8,
    from a copy that holds only the shipped files (as the ssh backend's code push does)."""
    exe = python38()
    if exe is None:
        pytest.skip("no Python 3.8 on this machine; the AST checks above still ran")
    import shutil

    for rel in REMOTE_SAFE + LAZY_HEAVY:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SRC / rel, tmp_path / rel)
    # A __main__ runs its program when imported; the entry points are started below instead.
    modules = [module_name(p) for p in REMOTE_SAFE + LAZY_HEAVY if not p.endswith("/__main__.py")]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\nprint('ok')"
    out = subprocess.run([exe, "-s", "-c", code, *modules], capture_output=True, text=True, env=env, timeout=60,
                         cwd=str(tmp_path))
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    agent = subprocess.run([exe, "-m", "potato.training.agent", "--help"], capture_output=True, text=True,
                           env=env, timeout=60, cwd=str(tmp_path))
    assert agent.returncode == 0 and "--token-file" in agent.stdout, agent.stderr
    worker = subprocess.run([exe, "-m", "potato.training.worker", str(tmp_path / "no-job")], capture_output=True,
                            text=True, env=env, timeout=60, cwd=str(tmp_path))
    assert worker.returncode == 2, worker.stderr  # bad job: it ran, read nothing, said so


def test_the_guard_catches_what_it_should(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from __future__ import annotations\nimport numpy\nx = list[int]\ny = 'a'.removeprefix('b')\n"
                   "import zoneinfo\nz = isinstance(1, int | str)\nflags = 1 | 2\n"
                   "def f(a: list[int] | None) -> dict[str, int]: ...\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    assert len(py38_problems("bad.py")) == 3  # list[int], removeprefix, int | str; not 1 | 2, not f's annotations
    assert sorted(m for m in imports(parse("bad.py"), False) if not is_allowed(m)) == ["numpy", "zoneinfo"]
    with pytest.raises(SyntaxError):
        (tmp_path / "match.py").write_text("match x:\n    case 1:\n        pass\n")
        parse("match.py")


def test_the_code_push_is_the_checked_package_and_its_hash_follows_the_source(tmp_path: Path) -> None:
    import io
    import shutil
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(code_archive(SRC))) as tar:
        names = tar.getnames()
    assert sorted(names) == sorted(REMOTE_SAFE + LAZY_HEAVY)
    copy = tmp_path / "src"
    for rel in names:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SRC / rel, copy / rel)
    assert code_hash(copy) == code_hash(SRC)
    (copy / "potato/training/agent/program.py").write_text((SRC / "potato/training/agent/program.py").read_text() + "\n# changed\n")
    assert code_hash(copy) != code_hash(SRC)
