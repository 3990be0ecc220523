"""The package's modules by what they import: what is shipped to Spark, the params, and the rooms below the Airflow
side (the wheel a team installs: component/test_package_wheel.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from support import ROOT, imports


def imports_beyond(paths: list[Path], allowed: tuple[str, ...]) -> dict[str, set[str]]:
    """What each module of ``paths`` imports besides the standard library and the ``allowed`` packages (a relative
    import is of ``kafka_soak.shared``, the one package that uses them)."""
    import ast

    outside: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):  # the package itself is its __init__
                names = [alias.name + (".__init__" if alias.name == "kafka_soak" else "") for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [f"{node.module}.{a.name}" for a in node.names] if node.level == 0 else ["kafka_soak.shared"]
            else:
                continue
            for name in names:
                if not (name.split(".")[0] in (*sys.stdlib_module_names, "__future__")
                        or any(name == a or name.startswith(a + ".") for a in allowed)):
                    outside.setdefault(path.name, set()).add(name)
    return outside


def test_what_is_shipped_to_spark_imports_only_the_standard_library_and_confluent_kafka():
    """``kafka_soak.shared`` goes to a Spark cluster's driver and executors as one zip (``validate.shipped_modules``),
    where nothing else of the project is, nor Airflow: each of its modules imports the standard library, confluent-kafka
    (the topics' offsets, which the driver reads) and the package itself, nothing else."""
    shared = ROOT / "plugins" / "kafka_soak" / "shared"
    assert {p.stem for p in shared.glob("*.py")} == {"__init__", "contracts", "java_client", "offsets", "resources",
                                                        "rundir", "stalls", "verdicts"}
    assert imports_beyond(sorted(shared.glob("*.py")), ("confluent_kafka", "kafka_soak.shared")) == {}


def test_the_params_are_declared_without_loading_an_implementation():
    """``params`` (each param's default, schema and audience) is read wherever a conf is checked or a DAG parsed, and
    in the reference worker's image: it imports the standard library alone, and the implementations read their
    defaults from it, not the other way round."""
    assert imports_beyond([ROOT / "plugins" / "kafka_soak" / "params.py"], ()) == {}


def test_no_room_of_the_package_imports_the_airflow_side_above_it():
    """The folders by role (``backends``, ``clients``, ``load``, ``faults``, ``checker``, ``evidence``, ``toolchain``,
    ``infra``, ``shared``) are called by the DAG's side at the top (factory, tasks, admission, alerting, ...), never the
    other way round: of the top, a room reads only the params and the plan's type."""
    package = ROOT / "plugins" / "kafka_soak"
    top = {p.stem for p in package.glob("*.py")} - {"__init__", "params", "plan"}
    allowed = ("kafka_soak.__init__", "kafka_soak.params", "kafka_soak.plan",
               *(f"kafka_soak.{d.name}" for d in package.iterdir() if (d / "__init__.py").is_file()))
    rooms = sorted(p for d in package.iterdir() if (d / "__init__.py").is_file() for p in d.rglob("*.py"))
    found = imports_beyond(rooms, ("confluent_kafka", "airflow", "docker", "psutil", "tenacity", "jinja2", "altair",
                                   "pandas", "fastapi", "starlette", "yaml", "markupsafe", "vl_convert", *allowed))
    assert len(rooms) > 40 and top >= {"factory", "tasks", "admission", "alerting", "run_plan", "provision"}
    assert found == {}, f"a room imports beyond the rooms and the params: {found}"


def test_the_floors_run_one_way_no_two_rooms_import_each_other_and_no_module_is_in_a_circle():
    """Each room imports only rooms below it (``imports.FLOORS``, ``TYPE_CHECKING`` imports too): what two rooms share
    lives on a floor under both, so none can come to need the other back. The figures docs/architecture.md quotes."""
    edges = imports.graph()
    assert {imports.room(m) for m in edges} >= set(imports.FLOORS), "every folder of the package is on a floor"
    assert {d.name for d in imports.PACKAGE.iterdir() if (d / "__init__.py").is_file()} == set(imports.FLOORS)
    assert imports.mutual_pairs(edges) == []
    assert imports.circles(edges) == []
    assert imports.upward(edges) == []
    assert ("kafka_soak.run_plan", "kafka_soak.clients.profile") in imports.room_imports(edges)[("run_plan", "clients")]


def test_the_import_measure_finds_a_pair_a_circle_and_an_import_up_a_floor():
    """The measure itself, on a graph with one of each: a guard that sees nothing would pass the test above."""
    edges = {"kafka_soak.load.generator": {"kafka_soak.faults.program"},
             "kafka_soak.faults.program": {"kafka_soak.load.generator"},
             "kafka_soak.clients.profile": {"kafka_soak.run_plan"}, "kafka_soak.run_plan": set()}
    assert imports.mutual_pairs(edges) == [("faults", "load")]
    assert imports.circles(edges) == [["kafka_soak.faults.program", "kafka_soak.load.generator"]]
    assert sorted(imports.upward(edges)) == [("kafka_soak.clients.profile", "kafka_soak.run_plan"),
                                              ("kafka_soak.load.generator", "kafka_soak.faults.program")]


def test_the_wheel_lists_every_package_of_the_source():
    """pyproject.toml names the wheel's packages one by one (three of them come from outside ``plugins/``): a folder of
    the package it leaves out would be missing from every installed copy, and fail only there."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    package = ROOT / "plugins" / "kafka_soak"
    found = {".".join(("kafka_soak", *d.relative_to(package).parts)).rstrip(".") for d in (package, *package.rglob("*"))
             if (d / "__init__.py").is_file()}
    assert found - listed == set()
