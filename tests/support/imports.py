"""The package's imports, measured from its source: which modules import which, the rooms (the folders of
``plugins/kafka_soak``, and each module at its top) they join, the pairs of rooms that import each other and the
circles of modules. ``python tests/support/imports.py`` prints the figures docs/architecture.md quotes
("Where the code lives"); ``tests/unit/airflow_side/test_package.py`` holds them at zero, ``TYPE_CHECKING`` imports
included."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "plugins" / "kafka_soak"
# The floors, lowest first: a room imports only rooms on its floor's left (and the plan's leaves, ``params`` and
# ``plan``, below them all); the Airflow side, every module at the top, stands on all of them.
LEAVES = ("params", "plan")
FLOORS = ("shared", "toolchain", "infra", "backends", "clients", "load", "faults", "checker", "evidence")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The package's modules ``name`` imports (the package's ``__init__`` alone when only it is named)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known] or [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imported(name, path, known)) for name, path in known.items()}


def room(module: str) -> str:
    """A folder of the package, or a module at its top (the package itself is its ``__init__``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def room_imports(edges: dict[str, set[str]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """``{(room, room it imports): [(module, module), ...]}``."""
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for source, targets in edges.items():
        for target in sorted(targets):
            if room(source) != room(target) and room(target) != "__init__":
                found.setdefault((room(source), room(target)), []).append((source, target))
    return found


def mutual_pairs(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    between = room_imports(edges)
    return sorted({tuple(sorted(pair)) for pair in between if pair[::-1] in between})


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other through a circle (each strongly connected set of more than one), by
    Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from a room to one that is not below it: a floor to its own floor's right or to the top, a leaf to
    anything of the package."""
    def floor(name: str) -> int:
        if name in LEAVES:
            return -1
        return FLOORS.index(name) if name in FLOORS else len(FLOORS)

    return [(source, target) for (a, b), pairs in room_imports(edges).items() for source, target in pairs
            if floor(b) >= floor(a) and not (floor(a) == floor(b) == len(FLOORS))]


def main() -> None:
    edges = graph()
    rooms = {room(m) for m in edges}
    print(f"modules: {len(edges)}, rooms: {len(rooms)} ({len(rooms & set(FLOORS))} folders, "
          f"{len(rooms - set(FLOORS))} modules at the top)")
    print(f"imports between rooms: {sum(len(v) for v in room_imports(edges).values())}")
    for name, found in (("pairs of rooms importing each other", mutual_pairs(edges)),
                        ("circles of modules", circles(edges)), ("imports up a floor", upward(edges))):
        print(f"{name}: {len(found)}")
        for item in found:
            print("  ", item)


if __name__ == "__main__":
    sys.exit(main())
