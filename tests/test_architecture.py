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
    assert {"app.py", "startup.py", "open_thread.py", "threads.py", "sending.py", "cards.py", "commands.py"} <= names
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
    assert {"app", "startup", "open_thread", "projection", "ports", "widgets.confirmations",
            "widgets.card_factory"} <= set(graph)
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


def package_module_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Every module of the package and the modules of the package it imports: at any depth, lazy and
    ``TYPE_CHECKING`` imports included (a type-only import is a cycle for a reader and for mypy).
    ``pkg/__init__.py`` is the module ``pkg``."""
    def name_of(path: Path) -> str:
        parts = path.relative_to(root).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"

    names = {name_of(path): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        if name == "__init__":
            package = []
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[: len(package) - node.level + 1] + ([node.module] if node.module else [])
                targets = [".".join(base)] + [".".join([*base, alias.name]) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("instance_ai_tui."):
                base = (node.module or "").split(".")[1:]
                targets = [".".join(base)] + [".".join([*base, alias.name]) for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name.removeprefix("instance_ai_tui.") for alias in node.names
                           if alias.name.startswith("instance_ai_tui.")]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(
                    "instance_ai_tui.") and node.value != "instance_ai_tui.__main__":
                targets = [node.value.removeprefix("instance_ai_tui.")]
            for target in targets:
                parts = [part for part in target.split(".") if part]
                for end in range(len(parts), 0, -1):  # the longest prefix that is a module
                    module = ".".join(parts[:end])
                    if module in names:
                        if module != name:
                            found.add(module)
                        break
        graph[name] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of ``graph`` with more than one module: its import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


#: import cycles that remain, each with the engineer removing it (issue 46 item 4): the agent loop and its
#: run (``runtime/agent`` <-> ``run`` through ``_abort_run``)
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def test_the_modules_of_the_package_form_no_import_cycle() -> None:
    """Issue 46 item 4: no module of the package imports, at any depth and through any other, itself —
    type-only and lazy imports counted. The cycles in ``KNOWN_CYCLES`` are being removed by their owners."""
    graph = package_module_graph()
    assert {"tui.app", "assistant.run_manager", "assistant.run_recovery", "runtime.agent", "protocol"} <= set(graph)
    cycles = {frozenset(cycle) for cycle in _cycles(graph)}
    assert cycles - set(KNOWN_CYCLES) == set(), sorted(sorted(cycle) for cycle in cycles - set(KNOWN_CYCLES))
    gone = set(KNOWN_CYCLES) - cycles
    assert not gone, f"a known cycle is gone: take it out of KNOWN_CYCLES: {[sorted(cycle) for cycle in gone]}"


def test_the_package_graph_sees_relative_lazy_and_type_only_imports(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "__init__.py").write_text("from .x import X\n", encoding="utf-8")
    (tmp_path / "a" / "x.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..b import y\nX = 1\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("def later():\n    from .a import x\n    from . import c\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("import importlib\nM = 'instance_ai_tui.b'\n", encoding="utf-8")
    graph = package_module_graph(tmp_path)
    assert graph == {"a": {"a.x"}, "a.x": {"b"}, "b": {"a", "a.x", "c"}, "c": {"b"}}  # (a's __init__ runs too)
    assert sorted(sorted(cycle) for cycle in _cycles(graph)) == [["a", "a.x", "b", "c"]]


# What Textual calls by name (bindings, handlers, hooks) and the headless hooks tests, scripts and
# benchmarks use may stay one-line calls into a room; nothing else on the app forwards.
APP_ALLOWED_FORWARDS = {"attach", "wait_until_rendered", "open_thread", "_frame", "_boot"}
ROOMS = {"thread", "threads", "sender", "cards", "run_status", "actions", "connection", "projection", "pending_watch",
         "terminal", "view", "heap", "boot"}


def _forwards_to_a_room(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = [stmt for stmt in function.body
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))]  # (the docstring)
    if len(body) != 1 or not isinstance(body[0], (ast.Expr, ast.Return)) or body[0].value is None:
        return False
    call = body[0].value.value if isinstance(body[0].value, ast.Await) else body[0].value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return False
    owner = call.func.value
    while isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Attribute):
        owner = owner.value  # (``self.thread.outbox.send``: the room is ``thread``)
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


# --------------------------------------------------------------------------- the rooms (issue 46 item 1)

#: modules of tui/ that still take the app, each with the engineer who is removing it (issue 46 item 1): none
APP_PARAMETER_EXCEPTIONS: dict[str, str] = {}


def _app_names(path: Path) -> list[str]:
    """Where ``path`` has a parameter named ``app`` or assigns an attribute named ``app`` (``self.app = …``),
    as ``line: what`` (reading Textual's own ``widget.app`` is not either)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.arg) and node.arg == "app":
            found.append(f"{node.lineno}: parameter app")
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "app":
                found.append(f"{node.lineno}: attribute app")
            elif (isinstance(target, ast.Name) and target.id == "app" and isinstance(node, ast.AnnAssign)
                  and any(word in ast.unparse(node.annotation) for word in ("App", "Host", "Any"))):
                found.append(f"{node.lineno}: attribute app")  # (a class-level ``app: X``; not a file's ``app:`` table)
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def test_no_module_of_the_tui_but_app_py_is_given_the_app() -> None:
    """Rooms are built from their collaborators (the open thread, the widgets they draw on, the rooms they
    call, ``ports.Ui`` for Textual's services): none is handed the app to reach the rest through it."""
    given = {
        name: found for path in modules("tui")
        if (name := str(path.relative_to(TUI))) != "app.py" and (found := _app_names(path))
    }
    assert set(given) - set(APP_PARAMETER_EXCEPTIONS) == set(), given
    assert set(APP_PARAMETER_EXCEPTIONS) <= set(given), "an exception that no longer holds: take it out of the list"


def test_the_app_checker_sees_parameters_and_attributes(tmp_path: Path) -> None:
    module = tmp_path / "room.py"
    module.write_text("class Room:\n    app: Any\n    def __init__(self, app, ui):\n        self.app = app\n"
                      "        self.ui = ui\n    def later(self):\n        return self.ui.app\n", encoding="utf-8")
    assert _app_names(module) == ["2: attribute app", "3: parameter app", "4: attribute app"]


#: the open thread's state: only ``tui/open_thread.py`` assigns it (``OpenThread``'s docstring)
OPEN_THREAD_STATE = {"thread_id", "conversation", "pending", "pending_cards", "opening", "cancelling", "run_state"}
#: what changes a set or dict in place
MUTATING = {"clear", "update", "add", "discard", "remove", "pop", "append", "extend", "insert", "setdefault"}


def _state_writes(path: Path, *, own_state_allowed: bool) -> list[str]:
    """Where ``path`` writes the open thread's state: an assignment to an attribute of those names (of
    ``self`` too unless ``own_state_allowed``: a widget may keep its own ``thread_id``), or a mutating call
    on one (``x.pending.clear()``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets
                       for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING
              and isinstance(node.func.value, ast.Attribute) and node.func.value.attr in OPEN_THREAD_STATE):
            targets = [node.func.value]
        for target in targets:
            if not isinstance(target, ast.Attribute) or target.attr not in OPEN_THREAD_STATE:
                continue
            of_self = isinstance(target.value, ast.Name) and target.value.id == "self"
            if not (of_self and own_state_allowed):
                found.append(f"{node.lineno}: {ast.unparse(target)}")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def test_only_the_open_thread_writes_the_open_threads_state() -> None:
    """Issue 46 item 1: the thread on screen (its id, conversation, waiting cards, run state, outbox) has one
    writer. The rooms (the modules at the top of tui/) never assign it; widgets and screens may keep their
    own ``self.thread_id`` or ``self.conversation`` (what they show), never another object's."""
    writes = {}
    for path in modules("tui"):
        name = str(path.relative_to(TUI))
        if name == "open_thread.py":
            continue
        found = _state_writes(path, own_state_allowed="/" in name)
        if found:
            writes[name] = found
    assert writes == {}


def test_the_state_checker_sees_assignments_and_changes_in_place(tmp_path: Path) -> None:
    module = tmp_path / "room.py"
    module.write_text("def f(thread, info):\n    thread.thread_id = 'x'\n    info.run_state = 'idle'\n"
                      "    thread.pending.clear()\n    a, thread.conversation = 1, None\n    thread.opening += 1\n"
                      "    thread.pending_cards.get('x')\n", encoding="utf-8")
    assert _state_writes(module, own_state_allowed=False) == [
        "2: thread.thread_id", "3: info.run_state", "4: thread.pending", "5: thread.conversation", "6: thread.opening"]


#: modules that still import another module's private names, each with its owner (issue 46 item 5): the name
#: is part of what the other module offers, so it should be public there
PRIVATE_NAME_EXCEPTIONS = {
    "cli/run.py": "harden", "store/sqlite.py": "harden", "tui/widgets/n8n_cards.py": "n8n",
    "tui/widgets/n8n_setup_card.py": "n8n",
}


def _private_names_imported(path: Path) -> list[str]:
    """The private names (``_x``, or from a ``_module``) ``path`` imports from another module of the package."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("instance_ai_tui")):
            names = [alias.name for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
            if any(part.startswith("_") and not part.startswith("__") for part in (node.module or "").split(".")):
                names.append(node.module or "")
            found += [f"{node.lineno}: {name}" for name in names]
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    imported = {name: found for path in sorted(PACKAGE.rglob("*.py"))
                if (found := _private_names_imported(path)) and
                (name := str(path.relative_to(PACKAGE))) not in PRIVATE_NAME_EXCEPTIONS}
    assert imported == {}
    still = {name for name in PRIVATE_NAME_EXCEPTIONS if _private_names_imported(PACKAGE / name)}
    assert still == set(PRIVATE_NAME_EXCEPTIONS), "an exception that no longer holds: take it out of the list"


# --------------------------------------------------------------------------- doors to third-party internals

#: the one module allowed to import a package's private names (a module or name starting with ``_``): its door,
#: with a contract test of what it uses, and the package bounded above in pyproject.toml
#: (the model adapter has no door: it speaks HTTP itself, issue 46 item 3; ``openai`` is a test dependency)
DOORS = {"textual": "tui/textual_internals.py"}
#: doors still open elsewhere, each with the engineer closing it
PRIVATE_IMPORT_EXCEPTIONS: dict[str, str] = {}
#: packages whose internals are touched and whose range has no upper bound yet, each with who bounds it
UNBOUNDED_EXCEPTIONS: dict[str, str] = {}


def _private_imports(path: Path) -> set[str]:
    """The third-party packages ``path`` imports private names of (``from textual._resolve import x``,
    ``import openai._streaming``, ``from textual.keys import _character_to_key``, ``from openai import _x``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if any(part.startswith("_") for part in node.module.split(".")) or any(
                    alias.name.startswith("_") and not alias.name.startswith("__") for alias in node.names):
                found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if any(part.startswith("_") for part in alias.name.split(".")[1:]):
                    found.add(alias.name.split(".")[0])
    return found - {"instance_ai_tui", "__future__"}


def test_private_names_of_a_dependency_are_imported_only_behind_its_door() -> None:
    outside = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE))
        touched = {package for package in _private_imports(path) if DOORS.get(package) != name}
        if touched and name not in PRIVATE_IMPORT_EXCEPTIONS:
            outside[name] = sorted(touched)
    assert outside == {}


def test_the_private_import_checker_sees_every_form(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import openai._streaming as s\nfrom textual.keys import _character_to_key, Keys\n"
                      "from httpx import Client\nfrom mcp.client._x import y\nfrom . import _private\n",
                      encoding="utf-8")
    assert _private_imports(module) == {"openai", "textual", "mcp"}


def _requirements() -> dict[str, str]:
    import re
    import tomllib

    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = {}
    for requirement in project["dependencies"]:
        match = re.match(r"([A-Za-z0-9_.-]+)(.*)", requirement)
        assert match is not None
        found[match.group(1).lower().replace("_", "-")] = match.group(2)
    return found


def test_every_dependency_whose_internals_are_touched_is_bounded_above() -> None:
    """A package whose private names the code imports (``DOORS``, the exceptions) breaks without notice in a
    new version: its range in pyproject.toml has an upper bound (the versions the suite passes on)."""
    requirements = _requirements()
    touched = {package for path in PACKAGE.rglob("*.py") for package in _private_imports(path)}
    assert touched <= set(requirements), sorted(touched - set(requirements))
    unbounded = {package: requirements[package] for package in touched if "<" not in requirements[package]}
    assert set(unbounded) == set(UNBOUNDED_EXCEPTIONS), unbounded
