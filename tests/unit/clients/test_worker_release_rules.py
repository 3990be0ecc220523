"""The reference worker on confluent-kafka releases (param ``worker_versions``) and in the style of confluent-kafka's
own example (param ``worker_style``): resolved into the run's members and commands, or refused before anything starts
(a release's virtualenv is built for real in component/test_worker_releases.py)."""

from __future__ import annotations

import subprocess
import sys

import confluent_kafka
import pytest

from kafka_soak import preflight, run_plan
from kafka_soak.clients import subjects
from kafka_soak.clients.reference import releases
from kafka_soak.clients.reference.worker import WRONG_RELEASE_EXIT_CODE
from kafka_soak.infra.runtime.local import PLUGINS_DIR, child_env
from kafka_soak.plan import ParamsError
from kafka_soak.toolchain import maven


def test_each_release_is_a_member_that_runs_its_own_virtualenv_isolated():
    """Two releases: a matrix of two members, each its own group and verdict, each instance the release's interpreter
    in isolated mode (no PYTHONPATH: nothing of the suite's environment ahead of the release's packages), the suite's
    modules appended after them, and the release it must find."""
    plan = run_plan.check({"worker_versions": ["2.1.0", "2.1.1"]}, app_id="d-app")
    app = subjects.profile(plan)
    assert (app.build, app.versions, subjects.matrix(plan)) == ("worker", ["2.1.0", "2.1.1"], ["2.1.0", "2.1.1"])
    assert subjects.app_ids(plan) == ["d-app-2.1.0", "d-app-2.1.1"]
    assert [m.label for m in app.members] == ["confluent-kafka 2.1.0", "confluent-kafka 2.1.1"]
    python, isolated, unbuffered, code, boot, *rest = app.command
    assert python == str(releases.venv_dir("{{version}}") / "bin" / "python").replace("{{version}}", "{version}")
    assert (isolated, unbuffered, code) == ("-I", "-u", "-c")
    assert f"sys.path.append({str(PLUGINS_DIR)!r})" in boot.replace("{{", "{").replace("}}", "}")
    assert rest[:2] == ["--client-release", "{version}"] and "--bootstrap" in rest
    assert "d-app-2.1.1-2-producer" in subjects.client_ids(plan)


def test_one_release_is_the_runs_only_app_and_none_runs_this_interpreter():
    one = subjects.profile(run_plan.check({"worker_versions": ["2.13.0"]}))
    assert (one.matrix, one.versions, one.members[0].label) == ([], ["2.13.0"], "confluent-kafka 2.13.0")
    suites = subjects.profile(run_plan.check({}))
    assert (suites.build, suites.versions, suites.command[0]) == ("", [""], sys.executable)
    assert "--client-release" not in suites.command


def test_the_example_style_is_a_worker_option_and_a_title():
    plan = run_plan.check({"worker_style": "example", "worker_versions": ["2.13.0", "2.13.2"]})
    app = subjects.profile(plan)
    assert app.command[app.command.index("--style") + 1] == "example"
    assert app.title == "worker (confluent-kafka's example) on confluent-kafka 2.13.0, 2.13.2"
    assert "--style" not in subjects.profile(run_plan.check({})).command


@pytest.mark.parametrize(("conf", "refusal"), [
    ({"app": "streams", "worker_versions": ["2.1.0"]},
     "worker_versions: a setting of the reference worker (set app to 'worker' and leave app_command empty)"),
    ({"app_command": ["my-app"], "worker_style": "example"}, "worker_style: a setting of the reference worker"),
    ({"worker_versions": ["2.1.0"], "runtime": "docker"},
     "worker_versions: a confluent-kafka release runs in a virtualenv of this machine (runtime 'local')"),
    ({"worker_versions": ["2.11.1", "2.12.0"], "group_protocol": "consumer"},
     "group_protocol: 'consumer' (KIP-848) is generally available from confluent-kafka 2.12 on (librdkafka 2.12): "
     "not 2.11.1 of worker_versions"),
    ({"worker_style": "example", "commit_interval_ms": 50},
     "commit_interval_ms: the example worker (worker_style 'example') commits every 100 records"),
])
def test_what_the_worker_cannot_run_is_refused_naming_the_param(conf, refusal):
    with pytest.raises(ParamsError) as refused:
        run_plan.check(conf)
    assert refusal in str(refused.value)


def test_a_release_string_is_checked_before_anything_is_installed(monkeypatch, tmp_path):
    """Not MAJOR.MINOR.PATCH: refused by name without running an installer (and the schema refuses it in the trigger
    form first)."""
    monkeypatch.setenv("SOAK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(releases, "installer", lambda *_: pytest.fail("nothing is installed for a bad string"))
    for bad in ("2.1", "latest", "2.1.0; rm -rf /", "2.1.0\n"):
        with pytest.raises(releases.WorkerVersionError, match=r"^worker_versions: .* is not a confluent-kafka release"):
            releases.build(bad)
        assert isinstance(releases.WorkerVersionError("x"), maven.BuildError), "preflight reports it as a build error"
    assert not list(tmp_path.iterdir())


def test_the_virtualenv_pins_the_release_and_keeps_the_workers_other_requirements():
    pinned = releases.requirements("2.1.0")
    assert "confluent-kafka==2.1.0" in pinned and "tenacity" in pinned
    assert not [r for r in pinned if r.startswith("confluent-kafka") and r != "confluent-kafka==2.1.0"]
    assert releases.venv_dir("2.1.0").name.startswith(f"2.1.0-py{sys.version_info.major}.{sys.version_info.minor}-")
    assert releases.venv_dir("2.1.0").parent == maven.cache_root() / "venvs" / "confluent-kafka"


def test_preflight_builds_each_release_of_the_plan(monkeypatch):
    built = []
    monkeypatch.setitem(preflight.BUILDS, "worker", built.append)
    preflight.check(run_plan.check({"worker_versions": ["2.1.0", "2.1.1"]}))
    preflight.check(run_plan.check({}))
    assert built == ["2.1.0", "2.1.1"]


# What uv says (0.13.9, with --only-binary confluent-kafka) of a release with no wheel for CPython 3.11, and of none.
NO_WHEEL = ("error: No solution found when resolving dependencies\n  cause: Because confluent-kafka==1.9.2 has no usable "
            "wheels and you require confluent-kafka==1.9.2, we can conclude that your requirements are unsatisfiable.")
NO_RELEASE = ("error: No solution found when resolving dependencies\n  cause: Because there is no version of "
              "confluent-kafka==9.9.9 and you require confluent-kafka==9.9.9, we can conclude that your requirements "
              "are unsatisfiable.")


@pytest.mark.parametrize(("version", "said", "refusal"), [
    ("1.9.2", NO_WHEEL, "worker_versions: PyPI serves no confluent-kafka 1.9.2 wheel for CPython"),
    ("9.9.9", NO_RELEASE, "worker_versions: PyPI has no confluent-kafka 9.9.9 (allowed: "),
    ("2.1.0", "error: Failed to fetch: connection refused", "worker_versions: cannot install confluent-kafka 2.1.0: "
                                                           "error: Failed to fetch: connection refused (allowed: "),
], ids=["no-wheel", "no-release", "other"])
def test_an_install_that_fails_names_the_param_and_what_is_allowed(monkeypatch, tmp_path, version, said, refusal):
    """What the installer says becomes one line naming the param and what is allowed; the staging directory is gone
    (nothing that looks built)."""
    monkeypatch.setenv("SOAK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(releases, "installer", lambda staging, version: [
        [sys.executable, "-c", f"import sys; sys.stderr.write({said!r}); sys.exit(1)"]])
    with pytest.raises(releases.WorkerVersionError) as refused:
        releases.build(version)
    message = str(refused.value)
    assert message.startswith(refusal) and "\n" not in message
    assert "allowed: a confluent-kafka release PyPI serves as a wheel for CPython" in message
    assert not list((tmp_path / "venvs" / "confluent-kafka").iterdir())


def test_a_staged_build_is_whole_or_absent(tmp_path):
    """``maven.staged``: built once and then cached; a build that fails leaves nothing that looks built."""
    target = tmp_path / "thing"

    def fails(staging):
        (staging / "half").write_text("x")
        raise RuntimeError("cut short")

    with pytest.raises(RuntimeError):
        maven.staged(target, fails)
    assert not list(tmp_path.iterdir())
    assert maven.staged(target, lambda staging: (staging / "whole").write_text("x") and "made") > 0
    assert (target / "whole").exists() and (target / maven.DONE).read_text() == "made\n"
    assert maven.staged(target, lambda staging: pytest.fail("built again")) == 0.0


def test_the_worker_will_not_run_on_another_release_than_it_was_given():
    """The suite's own confluent-kafka is not 0.0.1: the worker says which it found, where, and exits before it
    connects anywhere (no broker here)."""
    required = [arg for name in ("bootstrap", "app-id", "input-topic", "output-topic", "changelog-topic",
                                 "assertions-topic") for arg in (f"--{name}", "unused")]
    started = subprocess.run([sys.executable, "-m", releases.WORKER_MODULE, *required, "--instance", "1",
                              "--client-release", "0.0.1"], env=child_env(), capture_output=True, text=True, timeout=60)
    assert started.returncode == WRONG_RELEASE_EXIT_CODE, started.stdout + started.stderr
    assert f"confluent-kafka {confluent_kafka.__version__} was imported (from {confluent_kafka.__file__}), not 0.0.1" \
        in started.stdout
