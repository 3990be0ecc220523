"""The suite's layers: every test module is in tests/unit, tests/component or tests/e2e, and what a test asks for of
the fixtures (its own, its module's and conftest's, followed through the fixtures they ask for) keeps it in its layer:
a unit test starts nothing real and runs no DAG, a component test runs no DAG."""

from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT, imports

TESTS = ROOT / "tests"
LAYERS = ("unit", "component", "e2e")
# conftest's fixtures that start something real: Apache Kafka (plain or SCRAM-secured), Spark, a Docker engine, Chromium.
REAL = {"kafka", "secured_cluster", "spark", "docker_engine", "browser"}
# conftest's fixtures that run scenario DAGs.
DAG_RUNS = {"alerted_runs", "known_bug_runs"}


def is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == "fixture"


def functions(path: Path) -> list[ast.FunctionDef]:
    return [node for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)]


def arguments(function: ast.FunctionDef) -> set[str]:
    return {arg.arg for arg in function.args.args}


def fixtures(path: Path) -> dict[str, set[str]]:
    """The fixtures ``path`` defines, each with the names it asks for."""
    return {f.name: arguments(f) for f in functions(path) if any(map(is_fixture, f.decorator_list))}


def asked_for(path: Path, shared: dict[str, set[str]]) -> dict[str, set[str]]:
    """Every fixture each test of ``path`` gets, directly or through another fixture."""
    known = {**shared, **fixtures(path)}
    asked = {}
    for test in (f for f in functions(path) if f.name.startswith("test_")):
        todo, seen = list(arguments(test)), set()
        while todo:
            name = todo.pop()
            if name in known and name not in seen:
                seen.add(name)
                todo.extend(known[name])
        asked[test.name] = seen
    return asked


def modules(layer: str) -> list[Path]:
    return sorted((TESTS / layer).rglob("test_*.py"))


def test_every_test_module_is_in_a_layer():
    outside = [p.relative_to(TESTS) for p in TESTS.rglob("test_*.py") if p.relative_to(TESTS).parts[0] not in LAYERS]
    assert outside == [], "a test module belongs in tests/unit/<room>, tests/component or tests/e2e"
    assert all(modules(layer) for layer in LAYERS)
    rooms = {p.relative_to(TESTS / "unit").parts[0] for p in modules("unit") if p.parent != TESTS / "unit"}
    assert rooms <= {*imports.FLOORS, "airflow_side", "bench"}, "tests/unit/<room>: a folder of the package, the " \
                                                                "top's (airflow_side) or the benchmarks'"


def test_a_unit_test_starts_nothing_real_and_a_component_test_runs_no_dag():
    shared = fixtures(TESTS / "conftest.py")
    assert REAL | DAG_RUNS <= set(shared), "the fixtures checked are conftest's"
    for layer, banned in (("unit", REAL | DAG_RUNS), ("component", DAG_RUNS)):
        wrong = {f"{path.relative_to(TESTS)}::{test}": sorted(names & banned) for path in modules(layer)
                 for test, names in asked_for(path, shared).items() if names & banned}
        assert wrong == {}, f"tests in tests/{layer} that need a layer above"
