"""Layer rules of DESIGN.md that hold today, checked on the source (imports at any depth,
lazy ones inside functions included, and module names given to importlib as strings)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "instance_ai_tui"


def imported_packages(path: Path, package: Path = PACKAGE) -> set[str]:
    """First-level subpackages of ``instance_ai_tui`` that ``path`` (a module of ``package``) imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = path.relative_to(package.parent).with_suffix("").parts
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[: len(here) - node.level])
                names = [".".join(base + ([node.module] if node.module else []))]
                if not node.module:  # from .. import x, y
                    names = [".".join([*base, alias.name]) for alias in node.names]
            elif node.module:
                names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(
                "instance_ai_tui.") and node.value != "instance_ai_tui.__main__":
            # (the entry point's name is compared, never imported: ``cli/run.py`` asks whether it runs as the command)
            names = [node.value]
        for name in names:
            parts = name.split(".")
            if parts[0] == "instance_ai_tui" and len(parts) > 1:
                found.add(parts[1])
    return found


def modules(package: str) -> list[Path]:
    return sorted((PACKAGE / package).rglob("*.py"))


@pytest.mark.parametrize(("package", "forbidden"), [
    ("protocol", {"tui", "client", "server", "assistant", "runtime", "bus", "store", "testing", "config"}),
    ("client", {"server", "store", "tui"}),
    # the screen sees only a Client: nothing of the store, the server, the assistant or the runtime
    ("tui", {"store", "server", "assistant", "runtime"}),
])
def test_layers(package: str, forbidden: set[str]) -> None:
    assert modules(package)
    broken = {
        str(path.relative_to(PACKAGE)): sorted(imported_packages(path) & forbidden)
        for path in modules(package)
        if imported_packages(path) & forbidden
    }
    assert broken == {}


# The rule of every package of ``instance_ai_tui`` (docs/architecture.md, "Layers"): what each may import.
# A package (or top-level module) missing here fails ``test_every_package_states_its_rule``: a new one must say.
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "config_file": set(),
    "__init__": set(),
    "config": {"config_file"},
    "confine": set(),
    "aio": set(),
    "log_secrets": set(),  # a leaf: the secrets no log line may show (mcp)
    "store": {"protocol", "config", "config_file"},
    "bus": {"aio", "protocol", "store"},
    "runtime": {"aio", "protocol", "store"},
    "replay": {"protocol"},
    "assistant": {"aio", "protocol", "store", "bus", "runtime", "config", "config_file", "confine", "log_secrets"},
    "server": {"aio", "protocol", "store", "bus", "runtime", "assistant", "config", "config_file", "confine"},
    # the embedded client starts the assistant through its composition root; no other client module may
    "client": {"aio", "protocol", "config", "config_file", "assistant", "confine"},
    "tui": {"aio", "client", "protocol", "config", "config_file"},
    "web": {"config", "config_file", "protocol"},
    "cli": {"aio", "protocol", "store", "bus", "runtime", "assistant", "server", "client", "tui", "web", "replay",
            "config", "config_file", "confine", "__init__", "log_secrets"},
    "__main__": {"cli"},
}
CLIENT_MODULES_THAT_START_THE_ASSISTANT = {"embedded.py", "factory.py"}


def packages() -> dict[str, list[Path]]:
    """Every first-level package (and top-level module) of ``instance_ai_tui`` with its modules."""
    found: dict[str, list[Path]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        name = parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")
        found.setdefault(name, []).append(path)
    return found


def package_imports(name: str, paths: list[Path]) -> set[str]:
    imported: set[str] = set()
    for path in paths:
        imported |= imported_packages(path)
    imported.discard(name)
    # ``from instance_ai_tui import __version__`` names the package's own __init__
    return {"__init__" if found.startswith("__version__") else found for found in imported}


def test_every_package_states_its_rule() -> None:
    assert set(packages()) - set(ALLOWED) == set(), "add the new package's rule to ALLOWED (and docs/architecture.md)"


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_every_package_imports_only_what_its_rule_allows(name: str) -> None:
    paths = packages().get(name, [])
    broken = {
        str(path.relative_to(PACKAGE)): sorted(package_imports(name, [path]) - ALLOWED[name])
        for path in paths
        if package_imports(name, [path]) - ALLOWED[name]
    }
    assert broken == {}


def test_only_the_embedded_client_starts_the_assistant() -> None:
    starting = {path.name for path in modules("client") if "assistant" in imported_packages(path)}
    assert starting <= CLIENT_MODULES_THAT_START_THE_ASSISTANT


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` (a path that comes back to its start), or [] when it has none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_packages_form_no_cycle() -> None:
    graph = {name: package_imports(name, paths) for name, paths in packages().items()}
    assert _cycle(graph) == []


def test_the_cycle_finder_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_checker_sees_every_form_of_import(tmp_path: Path) -> None:
    package = tmp_path / "instance_ai_tui"
    (package / "client").mkdir(parents=True)
    module = package / "client" / "x.py"
    module.write_text(
        "from __future__ import annotations\n"
        "import instance_ai_tui.bus.memory\n"
        "from ..store.base import NewEvent\n"
        "from .. import runtime\n"
        "from . import base\n"
        "def later():\n"
        "    from ..server.app import create_app\n"
        "    importlib.import_module('instance_ai_tui.tui.app')\n",
        encoding="utf-8",
    )
    assert imported_packages(module, package) == {"bus", "store", "runtime", "client", "server", "tui"}


def test_every_tui_module_is_checked() -> None:
    """The tui rule covers its sub-packages (widgets/, screens/) and the modules app.py was split into."""
    names = {str(path.relative_to(PACKAGE / "tui")) for path in modules("tui")}
    assert {"app.py", "boot.py", "threads.py", "sending.py", "cards.py", "commands.py"} <= names
    assert any(name.startswith("widgets/") for name in names) and any(name.startswith("screens/") for name in names)


def test_the_checker_sees_imports_inside_functions_and_importlib_strings(tmp_path: Path) -> None:
    package = tmp_path / "instance_ai_tui"
    (package / "tui" / "widgets").mkdir(parents=True)
    module = package / "tui" / "widgets" / "w.py"
    module.write_text(
        "import importlib\n"
        "class W:\n"
        "    def later(self):\n"
        "        from ...assistant import service\n"
        "        return importlib.import_module('instance_ai_tui.runtime.agent')\n",
        encoding="utf-8",
    )
    assert imported_packages(module, package) == {"assistant", "runtime"}


def _names_imported_from(path: Path, module_suffix: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(module_suffix)
        for alias in node.names
    }


@pytest.mark.parametrize("package", ["runtime", "bus"])
def test_the_runtime_and_the_bus_depend_on_small_storage_protocols(package: str) -> None:
    """Issue 11 item 7: nothing in runtime/ or bus/ depends on the whole ``Store``; each names the part it
    uses (``EventLog``, ``MessageStore``, ``CheckpointRecords``, … or its own ``MemoryStorage``)."""
    for path in modules(package):
        assert "Store" not in _names_imported_from(path, "store.base"), path


def test_no_module_of_the_package_is_over_800_lines() -> None:
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert sizes and {name: n for name, n in sizes.items() if n > 800} == {}
    assert sizes["tui/app.py"] < 600


def test_argument_parsing_lives_in_the_cli_package() -> None:
    """Issue 11 item 5: every command's argparse is in ``instance_ai_tui/cli/``; the layers expose plain
    functions (``replay.replay``, ``client.gateway.share_folder``, ...)."""
    outside = []
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "cli"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if "argparse" in names or module == "argparse":
                outside.append(str(path.relative_to(PACKAGE)))
    assert outside == []
    assert (PACKAGE / "cli" / "__init__.py").is_file()


TUI = PACKAGE / "tui"


def tui_module_graph(root: Path = TUI) -> dict[str, set[str]]:
    """The modules of ``tui/`` and the modules of ``tui/`` each imports: at any depth, lazy and
    ``TYPE_CHECKING`` imports included (a type-only import is a cycle for a reader and for mypy)."""
    names = {".".join(path.relative_to(root).with_suffix("").parts): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        here = ["tui", *name.split(".")]  # (``widgets.__init__``: ``from . import x`` is widgets' x)
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = ".".join(here[: len(here) - node.level] + ([node.module] if node.module else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("instance_ai_tui.tui"):
                base = (node.module or "").removeprefix("instance_ai_tui.")
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name.removeprefix("instance_ai_tui.") for alias in node.names]
            for target in targets:
                parts = target.split(".")
                if parts[0] != "tui":
                    continue
                # the longest prefix that is a module of tui/ (``from .widgets.x import Y``: ``widgets.x``)
                for end in range(len(parts), 1, -1):
                    module = ".".join(parts[1:end])
                    if module in names and module != name:
                        found.add(module)
                        break
        graph[name] = found
    return graph


def test_the_tui_modules_form_no_import_cycle() -> None:
    graph = tui_module_graph()
    assert {"app", "boot", "projection", "ports", "widgets.confirmations", "widgets.card_factory"} <= set(graph)
    assert "ports" in graph["projection"] and "app" not in graph["projection"]
    assert _cycle(graph) == []


def test_the_tui_graph_counts_type_only_and_lazy_imports(tmp_path: Path) -> None:
    (tmp_path / "widgets").mkdir()
    (tmp_path / "app.py").write_text("from .room import Room\n", encoding="utf-8")
    (tmp_path / "room.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .app import App\n", encoding="utf-8")
    (tmp_path / "widgets" / "card.py").write_text(
        "def later():\n    from ..room import Room\n    from instance_ai_tui.tui.widgets import other\n", encoding="utf-8")
    (tmp_path / "widgets" / "other.py").write_text("", encoding="utf-8")
    graph = tui_module_graph(tmp_path)
    assert graph == {"app": {"room"}, "room": {"app"}, "widgets.card": {"room", "widgets.other"}, "widgets.other": set()}
    assert _cycle(graph) == ["app", "room", "app"]


# What Textual calls by name (bindings, handlers, hooks) and the headless hooks tests, scripts and
# benchmarks use may stay one-line calls into a room; nothing else on the app forwards.
APP_ALLOWED_FORWARDS = {"attach", "wait_until_rendered", "send_message",
                        "export_thread", "refresh_after_settle", "_frame", "_boot", "open_thread"}
ROOMS = {"threads", "sender", "cards", "run_status", "actions", "connection", "projection", "pending_watch",
         "terminal", "view", "heap"}


def _forwards_to_a_room(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = [stmt for stmt in function.body
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))]  # (the docstring)
    if len(body) != 1 or not isinstance(body[0], (ast.Expr, ast.Return)) or body[0].value is None:
        return False
    call = body[0].value.value if isinstance(body[0].value, ast.Await) else body[0].value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return False
    owner = call.func.value
    return (isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self"
            and owner.attr in ROOMS)


def test_the_app_has_no_one_line_forwards_to_its_rooms() -> None:
    tree = ast.parse((TUI / "app.py").read_text(encoding="utf-8"))
    app = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "InstanceAiApp")
    forwards = {
        node.name for node in app.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _forwards_to_a_room(node)
        and not node.name.startswith(("on_", "action_", "check_")) and not node.decorator_list
    }
    assert forwards <= APP_ALLOWED_FORWARDS, sorted(forwards - APP_ALLOWED_FORWARDS)
