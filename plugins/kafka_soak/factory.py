"""Scenario files -> soak DAGs. Every scenario in ``dags/scenarios/*.yaml`` becomes one DAG built here.

    check_params -> provision (setup) -> plan_program -> start_generator -> toggle[step] (mapped, deferrable)
    -> await_generator -> drain -> stop_instances (teardown) -> validate (spark-submit) -> release (teardown)
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from airflow.sdk import DAG, Param, get_current_context, setup, task, teardown
from airflow.sdk.exceptions import AirflowFailException, ParamValidationError

from kafka_soak import backends, preflight, reaper, rundir, subjects, teardowns
from kafka_soak import params as soak_params
from kafka_soak import program as programs
from kafka_soak.alerting import SoakAlertNotifier, record_task_failure
from kafka_soak.backends.external import client_settings, settings_in_env
from kafka_soak.deadline import overdue_alert
from kafka_soak.drain import drain_subjects, fault_grace_s, open_transactions, restore_service
from kafka_soak.generator import Phase
from kafka_soak.instances import Instances
from kafka_soak.load import Load
from kafka_soak.operators.toggle import ToggleStepOperator
from kafka_soak.operators.validate import ValidateOperator
from kafka_soak.steps import read_t0, write_program

log = logging.getLogger(__name__)

NIGHTLY = "0 2 * * *"


def load_scenario(path: Path) -> dict[str, Any]:
    scenario = yaml.safe_load(path.read_text())
    unknown = set(scenario.get("params", {})) - set(soak_params.DEFAULTS)
    if unknown:
        raise ValueError(f"{path}: unknown params {sorted(unknown)}; known: {sorted(soak_params.DEFAULTS)}")
    return scenario


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
            defaults = env_object("SOAK_PARAM_DEFAULTS")
            allow = env_object("SOAK_TRIGGER_ALLOW")
        except ValueError as exc:
            log.error("%s; every soak run will be refused until it is fixed", exc)
            return cls({}, {}, str(exc))
        problems = [f"SOAK_PARAM_DEFAULTS: param {name}: {invalid}" for name, value in defaults.items()
                    if (invalid := schema_problem(name, value))]
        bad = [name for name, values in allow.items() if name not in soak_params.DEPLOYER_ONLY or not isinstance(values, list)]
        if bad:
            problems.append(f"SOAK_TRIGGER_ALLOW: {bad} must be params only the deployment sets "
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

    @classmethod
    def for_scenario(cls, scenario: dict[str, Any]) -> Admission:
        deployment = Deployment.from_environment()
        values = {**soak_params.DEFAULTS, **deployment.defaults, **scenario.get("params", {})}
        params = {name: Param(values[name], **schema) for name, schema in soak_params.PARAM_SCHEMAS.items()}
        refusal = deployment.problem
        if not refusal:
            try:
                soak_params.check(values, app_id_of(scenario))
            except soak_params.ParamsError as exc:
                refusal = f"the defaults of {scenario['dag_id']} (its scenario file and SOAK_PARAM_DEFAULTS) cannot run: {exc}"
                log.error("%s", refusal)
        return cls(params, deployment.allow, refusal, app_id_of(scenario))

    @property
    def defaults(self) -> dict[str, Any]:
        return {name: param.value for name, param in self.params.items()}

    def admit(self, conf: dict[str, Any], params: dict[str, Any]) -> soak_params.RunPlan:
        """The plan of a run triggered with ``conf`` whose resolved params are ``params``; raises
        ``soak_params.ParamsError`` or one of ``preflight.ERRORS`` naming each param that stops it."""
        refused = [self.refusal] if self.refusal else soak_params.trigger_errors(conf, self.defaults, self.allow)
        if refused:
            raise soak_params.ParamsError("; ".join(refused))
        plan = soak_params.check(params, self.app_id)
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


def _run_dir(create: bool = False) -> Path:
    return rundir.for_context(get_current_context(), create=create)


def _instances(plan: dict[str, Any], cluster: dict[str, Any]) -> Instances:
    return Instances.for_run(_run_dir(), cluster, plan)


def build_dag(scenario: dict[str, Any]) -> DAG:
    dag_id = scenario["dag_id"]
    app_id = app_id_of(scenario)
    lead_s = float(scenario.get("program_lead_s", 5))
    admission = Admission.for_scenario(scenario)

    with DAG(
        dag_id=dag_id,
        description=scenario.get("description"),
        doc_md=scenario.get("doc_md"),
        schedule=scenario.get("schedule", NIGHTLY),
        start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        catchup=False,
        max_active_runs=1,
        tags=["kafka-soak", *scenario.get("tags", [])],
        params=admission.params,
        deadline=None if admission.refusal else overdue_alert(scenario, admission.defaults, lead_s),
        default_args={"retries": 0, "on_failure_callback": record_task_failure},
        on_failure_callback=[SoakAlertNotifier()],
        on_success_callback=[SoakAlertNotifier(on="success")],
        user_defined_macros={"soak_run_dir": lambda dag_run: str(rundir.run_dir(dag_id, dag_run.run_id,
                                                                                 rundir.attempt_of(dag_run)))},
    ) as dag:

        @task(multiple_outputs=False)  # one XCom, not one per key as a dict annotation implies
        def check_params() -> dict[str, Any]:
            """Refuse a bad run before anything is provisioned; store the resolved program for replay."""
            context = get_current_context()
            try:
                run_dir = _run_dir(create=True)
            except OSError as exc:
                raise AirflowFailException(unwritable(rundir.runs_root(), exc)) from None
            try:
                plan = admission.admit(dict(context["dag_run"].conf or {}), dict(context["params"]))
            except (soak_params.ParamsError, *preflight.ERRORS) as exc:
                raise AirflowFailException(f"refused before provisioning: {exc}") from None
            try:
                rundir.write_json(run_dir / rundir.PARAMS, {"dag_id": dag_id, "run_id": context["run_id"],
                                                            "attempt": rundir.attempt_of(context["dag_run"]),
                                                            "params": dict(context["params"]), "plan": plan.as_dict()})
            except OSError as exc:
                raise AirflowFailException(unwritable(run_dir, exc)) from None
            reaper.reap_earlier(run_dir, context["run_id"], lambda run_id: dag_run_over(context["ti"], dag_id, run_id))
            log.info("program %r (%s), %d steps every %.0f s; %d records over %d keys; run directory %s",
                     programs.render(plan.program), plan.program_source, len(plan.program), plan.interval_s,
                     plan.records, plan.keys, run_dir)
            for phase in plan.phases:
                log.info("  load: %s", Phase(**phase).describe())
            log.info("app under test: %s", subjects.describe(plan.as_dict()))
            log.info("backend %s%s, runtime %s%s", plan.backend,
                     f" (Apache Kafka {plan.kafka_version}, {plan.brokers} broker(s))" if plan.backend == "local" else "",
                     plan.runtime, ", app image(s) " + ", ".join(i for i, _p, _h in preflight.app_images(plan))
                     if plan.runtime == "docker" else "")
            return plan.as_dict()

        @setup
        @task(multiple_outputs=False)
        def provision(plan: dict[str, Any]) -> dict[str, Any]:
            """Start the run's Kafka (or reach the external one), create its topics, set its quotas."""
            run_dir = _run_dir(create=True)
            prefix = f"soak.{dag_id}.{run_dir.name}"  # an attempt's own topics
            cluster = backends.create(plan, run_dir).provision(subjects.topics(plan), prefix,
                                                               fixed=subjects.app_names(plan))
            cluster.subjects = [s.as_dict() for s in subjects.build(plan, app_id, cluster.topics)]
            rundir.write_json(run_dir / rundir.CLUSTER, cluster.as_dict())
            return cluster.as_dict()

        @task
        def plan_program(plan: dict[str, Any], cluster: dict[str, Any]) -> list[dict[str, Any]]:
            """Fix T0 a little ahead, so the generator and the first step start together."""
            t0 = time.time() + lead_s
            steps = [s.as_dict() for s in programs.steps(plan["program"], t0, plan["interval_s"])]
            write_program(_run_dir(), plan, t0, steps)
            for s in steps:
                log.info("  %s at T0%+.0f s", programs.Step(**s).label, s["planned_at"] - t0)
            log.info("replay this program with -c '%s'", json.dumps({"program": programs.render(plan["program"]),
                                                                      "interval_s": plan["interval_s"]}))
            return steps

        @task
        def start_generator(plan: dict[str, Any], cluster: dict[str, Any], steps: list[dict[str, Any]]) -> None:
            """Start the load in its own process so it flows through the whole program (from T0 on)."""
            ti = get_current_context()["ti"]
            Load(_run_dir(), cluster, plan).start(start_at=steps[0]["planned_at"], attempt=ti.try_number)

        @task(multiple_outputs=False)
        def await_generator(plan: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
            """Wait for the generator; if it died, restart it (it resumes without duplicating an id)."""
            load = Load(_run_dir(), cluster, plan)
            attempt, allowed_s = 1, load.expected_s()
            deadline = read_t0(_run_dir()) + allowed_s
            while True:
                state = load.progress()
                if state.get("done"):
                    log.info("generator done: %d records, %.0f records/s", state["produced"], state["rate_per_s"])
                    return state
                if time.time() > deadline:
                    load.stop()
                    raise AirflowFailException(
                        f"the generator produced {state.get('produced', 0)} of {plan['records']} records in "
                        f"{allowed_s:.0f} s, as long as its program and load may take; stopped it. Its log: "
                        f"{_run_dir() / 'logs'}")
                if not load.running():
                    attempt += 1
                    if attempt > 3:
                        raise RuntimeError(f"the generator stopped before producing {plan['records']} records "
                                           f"three times; see {_run_dir() / 'logs'}")
                    log.warning("generator not running and not done (%s): restarting it to resume", state or "no progress")
                    load.start(start_at=read_t0(_run_dir()), attempt=attempt)
                elif state:
                    log.info("generator: %d/%d records, %.0f records/s", state["produced"], state["records"],
                             state["rate_per_s"])
                time.sleep(2)

        @task(multiple_outputs=False)
        def drain(plan: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
            """Bring back what the program left broken, then wait until the app has committed all input. A timeout
            does not stop the run: it says why (lag, stalled partitions, owners, open transactions) in the log and
            ``drain.json``, and the checker judges what the app committed."""
            run_dir = _run_dir()
            instances = _instances(plan, cluster)
            restored = restore_service(instances, backends.create(plan, run_dir), plan["program"])
            grace_s, grace_reason = fault_grace_s(plan["program"], subjects.stop_leaves_group(plan))
            if grace_reason:
                log.info("drain: %s", grace_reason)
            bootstrap, topic = cluster["bootstrap_servers"], cluster["topics"]["input"]
            settings = client_settings(cluster)
            outcome = {**restored, "timeout_s": plan["drain_timeout_s"] + grace_s, "grace_reason": grace_reason,
                       "backlog_allowed": plan["allow_backlog"]}
            with settings_in_env(settings):
                outcome.update(drain_subjects(instances, bootstrap, topic, outcome["timeout_s"],
                                              lambda: open_transactions(plan["kafka_version"], bootstrap, settings),
                                              plan["stall_timeout_s"]))
            rundir.write_json(run_dir / rundir.DRAIN, outcome)
            if outcome["status"] != "drained":
                log.warning("the drain timed out; the checker judges what the app committed (%d stalled partition(s))",
                            len(outcome["stalled"]))
            return outcome

        @teardown
        @task(multiple_outputs=False)
        def stop_instances(plan: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
            """Stop every instance gracefully (and the generator); runs even when something failed."""
            return teardowns.stop_app(_run_dir(), plan, cluster)

        @teardown
        def release(plan: dict[str, Any]) -> None:
            """Stop the Kafka this run started (or give back what it used of an external one)."""
            teardowns.release(_run_dir(), plan)

        plan = check_params()
        cluster = provision(plan)
        program = plan_program(plan, cluster)
        generator = start_generator(plan, cluster, program)
        toggles = ToggleStepOperator.partial(
            task_id="toggle", cluster=cluster, plan=plan, map_index_template="{{ step_label }}",
        ).expand(step=program)
        loaded = await_generator(plan, cluster)
        drained = drain(plan, cluster)
        stopped = stop_instances(plan, cluster)
        validate = ValidateOperator(
            task_id="validate", cluster=cluster, conn_id="spark_default", name=f"kafka-soak-validate-{dag_id}",
            out_dir="{{ soak_run_dir(dag_run) }}", expected_records="{{ params.records }}")
        released = release(plan)

        plan >> cluster >> program >> generator >> toggles >> loaded >> drained >> stopped >> validate >> released
        drained >> validate
        stopped.as_teardown(setups=cluster)
        released.as_teardown(setups=cluster)
    return dag


def build_all(scenarios_dir: Path | str) -> dict[str, DAG]:
    """One DAG per scenario file (``*.yaml``) of a folder, by dag id: a team's own folder gets its soaks with one line,
    ``globals().update(build_all("/opt/soaks"))`` in a DAG file of its Airflow."""
    dags = {}
    for path in sorted(Path(scenarios_dir).glob("*.yaml")):
        dag = build_dag(load_scenario(path))
        dags[dag.dag_id] = dag
    return dags
