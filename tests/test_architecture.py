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
                "instance_ai_tui."):
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
