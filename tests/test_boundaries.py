"""The architecture's boundaries, checked on the source with ``ast`` (not by importing anything).

1. ``core`` imports no platform SDK and no ``surfaces`` package.
2. A surface imports no other surface (nor another platform's SDK), and of the core only the surface
   API, ``core.surface_api`` (type-only imports too).
3. Only ``core/acp`` speaks the JSON-RPC wire: no other module has a ``"jsonrpc"`` string literal.
4. No import circle among ``core`` and ``surfaces`` modules: an import inside a function counts as
   one that runs (hiding an import there does not break a circle), and two modules that import
   each other only for type annotations are a circle too, unless they are one concept.
5. No module anywhere (core, surfaces, tests, bench) imports a ``_``-prefixed name from another one.
6. A surface's plugin module loads, and its ``check`` runs, where its SDK is not installed.

The surfaces and their SDKs are the registered ones (``core.loading``: the entry points), so a new
surface is checked without being named here; the toy surface of ``tests/toy_surface`` too.

Each rule is a small function over source text, tested on synthetic sources too, so a rule that
could never fail would be noticed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from core.loading import ENTRY_POINT_GROUP, registered

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"
SURFACES = ROOT / "surfaces"
TOY = ROOT / "tests" / "toy_surface"
#: The one module of the core a surface may import.
SURFACE_API = "core.surface_api"

#: Each registered surface's SDK modules, by surface (``SurfacePlugin.sdk_modules``).
PLATFORM_SDKS = {name: plugin.sdk_modules for name, plugin in registered().items()}
ALL_SDKS = tuple(sdk for sdks in PLATFORM_SDKS.values() for sdk in sdks)

#: Modules allowed to import a ``_``-prefixed name, and why. The spec names ``_format_acp_error`` and
#: ``_is_transient_raw_error`` (``core.failures``), and their tests call them; everything else goes
#: through the public ``core.describing.describe``.
PRIVATE_IMPORT_EXEMPT = {
    "tests/test_failures.py",
}

#: Modules outside core/acp allowed to write JSON-RPC frames, and why.
JSONRPC_EXEMPT = {
    # The bundled demo agent is the OTHER end of the wire: a stand-alone ACP agent process that
    # ``acp-relay demo-agent`` runs; the relay itself talks to it only through core/acp.
    "core/demo_agent.py",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str = "", is_package: bool = False) -> set[str]:
    """Every module ``source`` imports, relative imports resolved against ``module``.

    ``from a import b`` yields both ``a`` and ``a.b`` (``b`` may be a submodule). Imports inside
    functions and ``if TYPE_CHECKING`` blocks count too: they are still dependencies.
    """
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".") if package else []
                base_parts = base_parts[: len(base_parts) - (node.level - 1)] if node.level > 1 else base_parts
                base = ".".join(p for p in [*base_parts, node.module or ""] if p)
            else:
                base = node.module or ""
            if base:
                found.add(base)
            found.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names)
    return found


def is_within(name: str, packages: tuple[str, ...] | list[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def jsonrpc_literal_lines(source: str) -> list[int]:
    """Lines holding a ``"jsonrpc"`` string constant (dict keys included; docstrings excluded)."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return sorted(node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.strip().lower() == "jsonrpc" and id(node) not in docstrings)


def import_edges(source: str, module: str, is_package: bool, known: Iterable[str]) -> tuple[set[str], set[str]]:
    """The ``known`` modules ``source`` imports: (those whose import runs, those under ``if TYPE_CHECKING``).

    Importing ``a.b.c`` runs the packages ``a`` and ``a.b`` first, so they count. An import inside a
    function runs too (later, but it still needs the module).
    """
    known = set(known)
    runtime: set[str] = set()
    typing_only: set[str] = set()

    def targets(node: ast.stmt) -> set[str]:
        names = imported_modules(ast.unparse(node), module, is_package)
        return {".".join(n.split(".")[:i]) for n in names for i in range(1, n.count(".") + 2)} & known

    def visit(nodes: list[ast.stmt], type_only: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                (typing_only if type_only else runtime).update(targets(node))
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.body, True)
                visit(node.orelse, type_only)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        visit([n for n in inner if isinstance(n, ast.stmt | ast.ExceptHandler)], type_only)
                if isinstance(node, ast.ExceptHandler):
                    visit(node.body, type_only)

    visit(ast.parse(source).body, False)
    runtime.discard(module)
    typing_only.discard(module)
    return runtime, typing_only - runtime


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module, leaving out a package together with
    its own submodules only (a package importing its submodules is how packages work)."""
    reach = {m: set() for m in graph}
    for start in graph:
        todo = list(graph[start])
        while todo:
            m = todo.pop()
            if m not in reach[start] and m in graph:
                reach[start].add(m)
                todo.extend(graph[m])
    groups = {frozenset({m} | {n for n in reach[m] if m in reach[n]}) for m in graph}
    groups = {g for g in groups if len(g) > 1}

    def only_packaging(group: frozenset[str]) -> bool:
        first = min(group, key=len)
        return all(m == first or m.startswith(first + ".") for m in group)

    return sorted((g for g in groups if not only_packaging(g)), key=sorted)


def project_graphs() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(runtime edges, runtime and type-only edges) among the modules of core/ and surfaces/."""
    paths = {module_name(p): p for base in (CORE, SURFACES) for p in python_files(base)}
    runtime: dict[str, set[str]] = {}
    both: dict[str, set[str]] = {}
    for name, path in paths.items():
        run, typing_only = import_edges(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", paths)
        runtime[name], both[name] = run, run | typing_only
    return runtime, both


def python_files(base: Path) -> Iterator[Path]:
    for path in sorted(base.rglob("*.py")):
        if "__pycache__" not in path.parts:
            yield path


def surface_names() -> list[str]:
    return sorted(p.name for p in SURFACES.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def surface_packages() -> dict[str, Path]:
    """Each registered surface in this tree (its package's folder), and the toy surface's package."""
    found: dict[str, Path] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        folder = ROOT.joinpath(*point.module.split(".")[:2])
        if point.name in registered() and folder.is_dir():
            found[point.name] = folder
    found["toy"] = TOY / "acp_relay_toy"
    return found


def private_imports(source: str) -> list[str]:
    """``from x import _name`` (any ``_``-prefixed name but dunders) anywhere in ``source``."""
    return sorted(f"{node.module}.{alias.name}" for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.ImportFrom) and node.module != "__future__"
                  for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__"))


def imports_of(path: Path) -> set[str]:
    return imported_modules(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")


# -- the rules on synthetic sources --------------------------------------------------------------


def test_imported_modules_sees_every_import_form() -> None:
    source = (
        "import telegram.ext\n"
        "from discord import Client\n"
        "def f():\n    import slack_sdk\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from surfaces.slack import app\n"
    )
    found = imported_modules(source, "core.engine.x")
    assert {"telegram.ext", "discord", "slack_sdk", "surfaces.slack"} <= found
    assert [m for m in found if is_within(m, ALL_SDKS)]


def test_relative_imports_are_resolved_against_the_module() -> None:
    assert "surfaces.discord" in imported_modules("from ..discord import gateway\n", "surfaces.telegram.bot")
    assert "surfaces.discord" in imported_modules("from .. import discord\n", "surfaces.telegram.bot")
    assert "surfaces.telegram.render" in imported_modules("from .render import x\n", "surfaces.telegram.bot")
    assert "surfaces.telegram.render" in imported_modules("from .render import x\n", "surfaces.telegram", True)
    assert not [m for m in imported_modules("from .render import x\n", "surfaces.telegram.bot")
                if is_within(m, ["surfaces.discord"])]


def test_private_imports_are_found_and_dunders_are_not() -> None:
    source = ("from a.b import _hidden, shown\nfrom __future__ import annotations\n"
              "def f():\n    from c import _late\nfrom d import __version__\n")
    assert private_imports(source) == ["a.b._hidden", "c._late"]


def test_is_within_matches_packages_not_prefixes() -> None:
    assert is_within("telegram.ext", ["telegram"]) and is_within("telegram", ["telegram"])
    assert not is_within("telegramish", ["telegram"])


def test_jsonrpc_literals_are_found_in_code_not_in_docstrings() -> None:
    source = (
        '"""Talks jsonrpc? No: "jsonrpc" here is documentation."""\n'
        "def f():\n"
        '    """Not a frame: "jsonrpc"."""\n'
        '    return {"jsonrpc": "2.0", "id": 1}\n'
        'KEY = "JSONRPC"\n'
    )
    assert jsonrpc_literal_lines(source) == [4, 5]
    assert jsonrpc_literal_lines("x = {'method': 'session/prompt'}\n") == []


def test_import_circles_are_found_through_functions_and_type_checking_blocks() -> None:
    known = ["pkg", "pkg.a", "pkg.b", "pkg.c"]
    a_run, a_types = import_edges("from pkg import b\n", "pkg.a", False, known)
    b_run, _ = import_edges("def f():\n    from pkg.a import x\n", "pkg.b", False, known)
    c_run, c_types = import_edges(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import y\n", "pkg.c", False, known)
    assert a_run == {"pkg", "pkg.b"} and not a_types
    assert b_run == {"pkg", "pkg.a"}, "an import inside a function still runs"
    assert c_types == {"pkg", "pkg.a"} and "pkg.a" not in c_run
    graph = {"pkg": set(), "pkg.a": a_run, "pkg.b": b_run, "pkg.c": c_run}
    assert circles(graph) == [frozenset({"pkg.a", "pkg.b"})]
    assert circles({**graph, "pkg.a": a_run | {"pkg.c"}, "pkg.c": c_run | c_types}) == [
        frozenset({"pkg.a", "pkg.b", "pkg.c"})]
    # a package and its own submodules alone are not a design circle
    assert circles({"pkg": {"pkg.a"}, "pkg.a": {"pkg"}}) == []


# -- the rules on the real tree ------------------------------------------------------------------


def test_the_tree_is_where_the_rules_expect_it() -> None:
    assert (CORE / "acp").is_dir() and SURFACES.is_dir()
    assert len(list(python_files(CORE))) > 20
    assert surface_names(), "no surface packages found"


@pytest.mark.parametrize("path", list(python_files(CORE)), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_imports_no_platform_sdk_and_no_surface(path: Path) -> None:
    bad = sorted(m for m in imports_of(path) if is_within(m, [*ALL_SDKS, "surfaces"]))
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: core must stay surface-agnostic"


def test_every_surface_folder_is_a_registered_surface() -> None:
    assert set(surface_names()) == set(surface_packages()) - {"toy"}, "a surface package is not registered"
    assert set(surface_names()) == {"dashboard", "discord", "slack", "telegram"}


@pytest.mark.parametrize("surface", sorted(surface_packages()))
def test_a_surface_imports_of_the_core_only_the_surface_api(surface: str) -> None:
    problems = []
    for path in python_files(surface_packages()[surface]):
        bad = sorted(m for m in imports_of(path) if is_within(m, ["core"]) and m != SURFACE_API
                     and not m.startswith(f"{SURFACE_API}."))
        bad = [m for m in bad if m != "core"]  # ``from core.surface_api import x`` also names ``core``
        if bad:
            problems.append(f"{path.relative_to(ROOT)}: {bad}")
    assert not problems, "a surface imports the core only through core.surface_api:\n" + "\n".join(problems)


def test_the_surface_rule_is_not_vacuous() -> None:
    """The rule above sees the surfaces' imports of the surface API (and would see any other)."""
    seen = {m for path in python_files(SURFACES) for m in imports_of(path)}
    assert SURFACE_API in seen


@pytest.mark.parametrize("plugin", sorted(PLATFORM_SDKS))
def test_a_plugin_loads_and_checks_without_its_sdk(plugin: str) -> None:
    """Every SDK module the plugin names is made unimportable; the plugin still loads (through its
    entry point) and ``check`` still runs: check-config and the extra's sentence need no SDK."""
    code = (
        "import importlib.abc, sys\n"
        f"blocked = {PLATFORM_SDKS[plugin]!r}\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in blocked:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from core.loading import registered\n"
        f"plugin = registered()[{plugin!r}]\n"
        "print(type(plugin.check(plugin.settings())).__name__)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in blocked))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["list", "[]"]


@pytest.mark.parametrize("surface", sorted(surface_packages()))
def test_a_surface_imports_no_other_surface_or_platform_sdk(surface: str) -> None:
    others = [s for s in surface_names() if s != surface]
    foreign_sdks = [sdk for name, sdks in PLATFORM_SDKS.items() if name != surface for sdk in sdks]
    problems = []
    for path in python_files(surface_packages()[surface]):
        bad = sorted(m for m in imports_of(path)
                     if is_within(m, [f"surfaces.{o}" for o in others]) or is_within(m, foreign_sdks))
        if bad:
            problems.append(f"{path.relative_to(ROOT)}: {bad}")
    assert not problems, "surfaces never import each other:\n" + "\n".join(problems)


def test_no_module_imports_a_private_name_of_another() -> None:
    problems = []
    for base in (CORE, SURFACES, ROOT / "tests", ROOT / "bench"):
        for path in python_files(base):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in PRIVATE_IMPORT_EXEMPT and (found := private_imports(path.read_text(encoding="utf-8"))):
                problems.append(f"{rel}: {found}")
    assert not problems, "private names stay in their module:\n" + "\n".join(problems)


@pytest.mark.parametrize("rel", sorted(PRIVATE_IMPORT_EXEMPT))
def test_the_exempt_private_imports_still_exist(rel: str) -> None:
    assert private_imports((ROOT / rel).read_text(encoding="utf-8")), f"{rel} is clean now: drop it from the list"


def test_only_core_acp_writes_json_rpc_frames() -> None:
    problems = []
    for base in (CORE, SURFACES):
        for path in python_files(base):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("core/acp/") or rel in JSONRPC_EXEMPT:
                continue
            lines = jsonrpc_literal_lines(path.read_text(encoding="utf-8"))
            problems += [f"{rel}:{line}" for line in lines]
    assert not problems, f'"jsonrpc" literals outside core/acp: {problems}'


def test_core_acp_does_speak_json_rpc() -> None:
    """The rule above is not vacuous: the wire code is found where it should be."""
    assert any(jsonrpc_literal_lines(p.read_text(encoding="utf-8")) for p in python_files(CORE / "acp"))


def test_the_exemptions_still_exist() -> None:
    for rel in JSONRPC_EXEMPT:
        assert (ROOT / rel).exists(), f"{rel} is gone: drop its exemption"


def test_no_import_circle_among_core_and_surfaces_even_through_imports_inside_functions() -> None:
    runtime, _ = project_graphs()
    assert len(runtime) > 30
    found = [" <-> ".join(sorted(c)) for c in circles(runtime)]
    assert not found, f"import circles: {found}"


def test_no_two_modules_import_each_other_even_for_type_annotations() -> None:
    _, both = project_graphs()
    found = [" <-> ".join(sorted(c)) for c in circles(both)]
    assert not found, f"circles through type-only imports: {found}"
