"""Who may set what for a scenario's runs, and the check every run passes before anything is provisioned.

A scenario's params are the built-in defaults, under the deployment's ``SOAK_PARAM_DEFAULTS``, under the scenario
file's; a trigger conf may change what a run does, not where it runs or with which credentials (``params``: the
params marked ``deployer``), unless ``SOAK_TRIGGER_ALLOW`` lists the value. A deployment or scenario that cannot run
does not break the DAGs' import: each run is refused, saying why.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from airflow.sdk import Param
from airflow.sdk.exceptions import AirflowFailException, ParamValidationError

from kafka_soak import params as soak_params
from kafka_soak import preflight, reaper, run_plan, run_size
from kafka_soak.backends import kafka_jars, registry
from kafka_soak.clients import subjects
from kafka_soak.faults import program as programs
from kafka_soak.infra import connection
from kafka_soak.load.generator import Phase
from kafka_soak.plan import ParamsError, Plan
from kafka_soak.shared import rundir

log = logging.getLogger(__name__)


class ScenarioError(ValueError):
    """A scenario file that cannot be read as one: the message names the file and the field; ``dag_id`` is the
    file's own when it names a valid one."""

    def __init__(self, message: str, dag_id: str = "") -> None:
        super().__init__(message)
        self.dag_id = dag_id


DAG_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}")  # Airflow's own rule for a DAG id (KEY_REGEX, 250 characters)


def load_scenario(path: Path) -> dict[str, Any]:
    """A scenario file, refused if it is no mapping with a dag id, or sets a param that does not exist (a typo would
    silently not apply) or a value its schema refuses (Airflow would refuse the DAG, and the folder's other DAGs with
    it)."""
    try:
        scenario = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path.name}: cannot be read as YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(scenario, dict):
        raise ScenarioError(f"{path.name}: must be a mapping with dag_id and params (got {type(scenario).__name__})")
    if not isinstance(scenario.get("dag_id"), str) or not DAG_ID.fullmatch(scenario["dag_id"]):
        raise ScenarioError(f"{path.name}: dag_id must be 1-200 of A-Z a-z 0-9 _ . - (got {scenario.get('dag_id')!r})")
    params = scenario.setdefault("params", {})
    if not isinstance(params, dict):
        raise ScenarioError(f"{path.name}: params must be a mapping of param names to values")
    unknown = set(params) - set(soak_params.DEFAULTS)
    if unknown:
        raise ScenarioError(f"{path.name}: unknown params {sorted(unknown)}; known: {sorted(soak_params.DEFAULTS)}",
                            scenario["dag_id"])
    problems = [f"param {name}: {invalid}" for name, value in params.items() if (invalid := schema_problem(name, value))]
    if problems:
        raise ScenarioError(f"{path.name}: " + "; ".join(problems), scenario["dag_id"])
    return scenario


def unreadable_scenario(path: Path, error: ScenarioError) -> dict[str, Any]:
    """What stands for a scenario file that cannot be read: a DAG of its dag id (else its file's name), unscheduled,
    whose every run is refused with the error, so that the folder's other DAGs still import and the bad one says why
    where a person looks."""
    return {"dag_id": error.dag_id or rundir.safe_name(path.stem), "schedule": None, "params": {},
            "problem": str(error), "description": f"cannot run: {error}"}


DEFAULTS_ENV, ALLOW_ENV = "SOAK_PARAM_DEFAULTS", "SOAK_TRIGGER_ALLOW"  # the deployment's variables, below
# The run directory a run is checked against before it has one: a nightly run's.
NIGHTLY_ATTEMPT = rundir.safe_name("scheduled__2026-01-01T02:00:00+00:00")


@dataclass(frozen=True)
class Deployment:
    """What whoever deploys the suite sets for every scenario, from the environment of Airflow's processes:
    ``SOAK_PARAM_DEFAULTS`` (param defaults, JSON object) and ``SOAK_TRIGGER_ALLOW`` (JSON object: param -> the values
    a trigger conf may choose for a param only the deployment sets, e.g. ``{"kafka_conn_id": ["kafka_staging"]}``).
    A malformed variable does not break the import of the DAGs: ``problem`` refuses each run, saying why."""

    defaults: dict[str, Any]
    allow: dict[str, list[Any]]
    problem: str = ""

    @classmethod
    def from_environment(cls) -> Deployment:
        try:
            defaults = env_object(DEFAULTS_ENV)
            allow = env_object(ALLOW_ENV)
        except ValueError as exc:
            log.error("%s; every soak run will be refused until it is fixed", exc)
            return cls({}, {}, str(exc))
        problems = [f"{DEFAULTS_ENV}: param {name}: {invalid}" for name, value in defaults.items()
                    if (invalid := schema_problem(name, value))]
        bad = [name for name, values in allow.items() if name not in soak_params.DEPLOYER_ONLY or not isinstance(values, list)]
        if bad:
            problems.append(f"{ALLOW_ENV}: {bad} must be params only the deployment sets "
                            f"({', '.join(soak_params.DEPLOYER_ONLY)}), each with a list of values")
        if problems:
            log.error("%s; every soak run will be refused until it is fixed", "; ".join(problems))
            return cls({}, {}, "; ".join(problems))
        return cls(defaults, allow)


def schema_problem(name: str, value: Any) -> str:
    """Why ``value`` does not fit param ``name``'s schema ("" if it does), in Airflow's words."""
    try:
        Param(value, **soak_params.PARAM_SCHEMAS[name]).resolve()
    except ParamValidationError as exc:
        return str(exc).splitlines()[0]
    return ""


def env_object(variable: str, environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """A JSON object of params from an environment variable, or ValueError saying what is wrong with it."""
    raw = environ.get(variable, "").strip()
    try:
        values = json.loads(raw) if raw else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"{variable} is not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(values, dict):
        raise ValueError(f"{variable} must be a JSON object of params, got {type(values).__name__}")
    unknown = set(values) - set(soak_params.DEFAULTS)
    if unknown:
        raise ValueError(f"{variable}: unknown params {sorted(unknown)}; known: {sorted(soak_params.DEFAULTS)}")
    return values


def app_id_of(scenario: dict[str, Any]) -> str:
    """The application id (group id, transactional ids' prefix) of a scenario's app: ``<dag_id>-app`` unless the file
    names one."""
    return scenario.get("app_id", f"{scenario['dag_id']}-app")


@dataclass(frozen=True)
class Admission:
    """Who sets what for one scenario's runs, and the check every run passes before anything starts: the DAG's
    params (built-in defaults < the deployment's ``SOAK_PARAM_DEFAULTS`` < the scenario file's), the values a
    trigger may choose for what only the deployment sets, and a refusal for every run when the deployment's
    settings or the scenario's defaults cannot run (the DAG still imports)."""

    params: dict[str, Param]
    allow: dict[str, list[Any]]
    refusal: str
    app_id: str
    dag_id: str

    @classmethod
    def for_scenario(cls, scenario: dict[str, Any]) -> Admission:
        deployment = Deployment.from_environment()
        values = {**soak_params.DEFAULTS, **deployment.defaults, **scenario.get("params", {})}
        params = {name: Param(values[name], **schema) for name, schema in soak_params.PARAM_SCHEMAS.items()}
        refusal = scenario.get("problem") or deployment.problem
        if not refusal:
            try:
                run_plan.check(values, app_id_of(scenario))
            except ParamsError as exc:
                refusal = f"the defaults of {scenario['dag_id']} (its scenario file and {DEFAULTS_ENV}) cannot run: {exc}"
            except Exception as exc:  # a check that failed on an input nobody foresaw costs this DAG, not the folder
                log.exception("checking the defaults of %s", scenario["dag_id"])
                refusal = (f"the defaults of {scenario['dag_id']} (its scenario file and {DEFAULTS_ENV}) could not be "
                           f"checked: {type(exc).__name__}: {exc}")
        return cls(params, deployment.allow, refusal, app_id_of(scenario), scenario["dag_id"])

    @property
    def defaults(self) -> dict[str, Any]:
        return {name: param.value for name, param in self.params.items()}

    def merged(self, conf: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with a trigger's ``streams_config`` added to the scenario's rather than in its place (Airflow's
        params take a conf's object whole): a scenario's settings are what makes it reproduce its bug, so a trigger
        changes or adds settings and keeps the others."""
        given = conf.get("streams_config")
        if not isinstance(given, dict):
            return params
        return {**params, "streams_config": {**self.defaults["streams_config"], **given}}

    def admit(self, conf: dict[str, Any], params: dict[str, Any], attempt: str = "") -> Plan:
        """The plan of a run triggered with ``conf`` whose resolved params are ``params`` (``attempt``: its run
        directory's name, which its topics and its scope on a shared cluster are named after; a nightly run's when
        checked before there is one); raises ``ParamsError`` or one of ``preflight.ERRORS`` naming each param
        that stops it."""
        refused = [self.refusal] if self.refusal else run_plan.trigger_errors(conf, self.defaults, self.allow)
        if refused:
            raise ParamsError("; ".join(refused))
        attempt = attempt or NIGHTLY_ATTEMPT
        plan = run_plan.check(self.merged(conf, params), self.app_id, run_plan.run_scope(self.dag_id, attempt))
        named = run_size.name_problems(dict(plan), self.dag_id, attempt)
        if named:
            raise ParamsError("; ".join(named))
        preflight.check(plan)
        return plan


def dag_run_over(ti: Any, dag_id: str, run_id: str) -> bool:
    """Whether Airflow says the DAG run ended (unknown, e.g. a run Airflow no longer has: not over, left alone)."""
    try:
        return ti.get_dagrun_state(dag_id, run_id) not in ("queued", "running")
    except Exception as exc:
        log.info("state of DAG run %s unknown (%s): what it left running is left alone", run_id, exc)
        return False


def unwritable(where: Path, exc: OSError) -> str:
    return (f"refused before provisioning: cannot write the run's evidence in {where} ({exc.strerror or exc}); "
            "make SOAK_RUNS_DIR a writable directory with free space")


def open_run(context: Mapping[str, Any], admission: Admission, dag_id: str) -> Plan:
    """Admit a triggered run (``check_params``): create its run directory, refuse it before anything is provisioned if
    its params cannot run, store them and the resolved plan (``params.json``, for replay), stop what an earlier
    attempt left running, and say in the log what the run will do."""
    try:
        run_dir = rundir.for_context(context, create=True)
    except OSError as exc:
        raise AirflowFailException(unwritable(rundir.runs_root(), exc)) from None
    try:
        plan = admission.admit(dict(context["dag_run"].conf or {}), dict(context["params"]), run_dir.name)
    except (ParamsError, *preflight.ERRORS) as exc:
        raise AirflowFailException(f"refused before provisioning: {exc}") from None
    connection.mask(connection.app_secrets(dict(plan)))  # before anything logs the app's command
    try:
        rundir.write_json(run_dir / rundir.PARAMS, {"dag_id": dag_id, "run_id": context["run_id"],
                                                    "attempt": rundir.attempt_of(context["dag_run"]),
                                                    "launch": os.environ.get(rundir.LAUNCH_ENV, ""),
                                                    "params": dict(context["params"]), "plan": plan})
    except OSError as exc:
        raise AirflowFailException(unwritable(run_dir, exc)) from None
    reaper.reap_earlier(run_dir, context["run_id"], lambda run_id: dag_run_over(context["ti"], dag_id, run_id))
    log.info("program %r (%s), %d steps every %.0f s; %d records over %d keys; run directory %s",
             programs.render(plan["program"]), plan["program_source"], len(plan["program"]), plan["interval_s"],
             plan["records"], plan["keys"], run_dir)
    for phase in plan["phases"]:
        log.info("  load: %s", Phase(**phase).describe())
    log.info("app under test: %s", subjects.describe(plan))
    log.info("backend %s%s, runtime %s%s", plan["backend"],
             f" (Apache Kafka {', '.join(kafka_jars.broker_versions(plan)[1])}, {plan['brokers']} broker(s)"
             f"{' each' if plan['kafka_versions'] else ''})" if registry.kind(plan["backend"]).broker_faults else "",
             plan["runtime"], ", app image(s) " + ", ".join(i for i, _p, _h in preflight.app_images(plan))
             if plan["runtime"] == "docker" else "")
    return plan
