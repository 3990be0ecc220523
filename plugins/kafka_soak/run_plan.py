"""A run's plan: its params checked together and resolved (the program, the load's phases, the app under test's
profile), or refused with every problem named.

``params.PARAMS`` declares each param and JSON Schema checks each alone; ``check`` adds the checks that span several
params (an instance number above ``instances``, a broker above ``brokers``, params of another backend) and resolves
the program, so a bad run is refused before anything is provisioned, with a message that names the param and what is
allowed. The plan it returns (``Plan``) is what every task is given.
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, cast

from kafka_soak import run_size
from kafka_soak.backends import broker_settings, kafka_jars, registry
from kafka_soak.backends.kafka_releases import release_of
from kafka_soak.clients import allowed_settings, subjects
from kafka_soak.clients import profile as profiles
from kafka_soak.clients.reference import profiles as reference
from kafka_soak.clients.reference import releases, streams
from kafka_soak.faults import program as programs
from kafka_soak.faults.kind import Releases
from kafka_soak.faults.kinds import stall, upgrade
from kafka_soak.load import generator
from kafka_soak.params import (
    APP_ID,
    DEFAULTS,
    DEPLOYER_ONLY,
    MAX_RATE,
    MAX_RUN_S,
    MAX_STEPS,
    PARAM_SCHEMAS,
    PARAMS,
    PLACEHOLDERS,
    REFERENCE_ONLY,
    SHARED,
    STREAMS_BUGS,
    STREAMS_PROTOCOL_SINCE,
    UNNAMED_APP_ID,
    WHERE_DEPLOYER_SETS,
    growth_bounds,
)
from kafka_soak.plan import ParamsError, Plan


def resolve_phases(values: dict[str, Any], steps: int, rate: float) -> tuple[list[dict[str, Any]], list[str]]:
    """The generator's phases with their id ranges, and the problems found (the caller reports them)."""
    given = values["phases"] or [{"records": values["records"], "at_s": 0, "rate": rate}]
    errors = []
    total = sum(p["records"] for p in given)
    if total != values["records"]:
        errors.append(f"phases: their records add up to {total} but param records is {values['records']}; "
                      "make them equal")
    phases, first_id = [], 1
    for n, phase in enumerate(given, start=1):
        if phase.get("after_step") is not None and phase["after_step"] >= steps:
            errors.append(f"phases: phase {n} waits for step {phase['after_step']} but the program has {steps} "
                          f"steps (0..{steps - 1})")
        phases.append({**phase, "rate": float(phase.get("rate", 0)), "first_id": first_id})
        first_id += phase["records"]
    return phases, errors


SCOPE_CHARS = 10  # of a run's scope (``run_scope``); a plan checked without a run's is scoped with as many x's


def run_scope(dag_id: str, attempt: str) -> str:
    """What makes the names a run gives its app on a shared cluster its own: a digest of the DAG and the attempt (its
    run directory's name), short enough to leave Kafka Streams' internal topic names room."""
    return hashlib.sha256(f"{dag_id}/{attempt}".encode()).hexdigest()[:SCOPE_CHARS]


def scoped_group(group_id: str, backend: str, scope: str) -> str:
    """The group (and application id) the app runs as: its own where the run owns the cluster; on a shared one
    (``external``) the run's, ``<group_id>-<scope>``, so that the run never joins another app's group, writes into its
    state or deletes it at release, and two runs of one DAG never meet."""
    return f"{group_id}-{scope or 'x' * SCOPE_CHARS}" if registry.shared(backend) else group_id


def check(params: dict[str, Any], app_id: str | None = None, scope: str = "") -> Plan:
    """Resolve ``params`` into a plan for a backend, or raise ``ParamsError`` naming each bad param. With the run's
    ``app_id``, quotas on the run's own broker must name a client of the app under test; ``scope`` (``run_scope``)
    makes the app's group the run's own on a shared cluster."""
    values = {name: whole_numbers(value, PARAM_SCHEMAS[name])
              for name, value in {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}.items()}
    errors = []
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        errors.append(f"unknown params {unknown}; known: {sorted(DEFAULTS)}")
    infinite = [f"{name}: must be a finite number (got {value})" for name, value in numbers(values)
                if not math.isfinite(value)]
    if infinite:  # NaN passes every minimum and maximum of the schema; nothing below can work with it
        raise ParamsError("; ".join(errors + infinite))
    raw = values["program"]
    source = "given"
    program: list[str] = []
    if values["seed"] is None:  # drawn for this run (its scope: its DAG and attempt), kept in the plan for a replay
        values["seed"] = int(scope, 16) if scope else 0
    if raw in ("", [], None):
        errors.extend(random_program_errors(values))
        program = random_program(values)
        source = f"random(seed={values['seed']})"
    elif values["random_program"]:
        errors.append("random_program: shapes the random program of an empty program; this run gives its program "
                      f"({raw!r}): leave one of them out")
    else:
        try:
            for releases in start_releases(values):  # each cluster of a broker version matrix starts on its own
                program = programs.parse(raw, values["instances"], values["brokers"], releases)
        except programs.ProgramError as exc:
            errors.append(str(exc))
    duration = max(len(program), 1) * float(values["interval_s"])
    rate = float(values["rate"]) or values["records"] / duration
    phases, phase_errors = resolve_phases(values, len(program), rate)
    errors.extend(phase_errors if program else [])
    if program and duration > MAX_RUN_S:
        errors.append(f"interval_s: {len(program)} steps every {values['interval_s']} s last "
                      f"{duration / 86_400:.1f} days; a run's program may last {MAX_RUN_S // 86_400} days at most")
    errors.extend(load_errors(values, phases, duration, rate) if program else [])
    errors.extend(app_errors(values))
    errors.extend(deployment_errors(values, program))
    if values["app_profile"]:
        try:
            app = profiles.parse(values["app_profile"], values["partitions"], values["backend"], values["runtime"],
                                 PLACEHOLDERS, compared=upgrade.APP not in dict(programs.kinds_in(program)))
            values["app_profile"] = {**app.as_dict(),
                                     "group_id": scoped_group(app.group_id, values["backend"], scope)}
        except profiles.ProfileError as exc:
            errors.append(str(exc))
    if errors:
        raise ParamsError("; ".join(drawn(errors, source)))
    if not values["app_profile"]:  # from here on the run knows its app by its profile alone
        values["app_profile"] = reference.profile(
            values, scoped_group(app_id or UNNAMED_APP_ID, values["backend"], scope)).as_dict()
    errors.extend(record_size_errors(values))
    app = profiles.Profile.of(values["app_profile"])
    steps = programs.schedule(program)
    errors.extend(stall.problems(steps, app, values))
    errors.extend(run_size.problems(values, app))
    errors.extend(profiles.aggregate_reach_problems(app, values["records"], values["keys"]))
    if app_id:
        values["quotas"] = expand_quotas(values)
        errors.extend(quota_errors(values))
    if errors:
        raise ParamsError("; ".join(drawn(errors, source)))
    return cast(Plan, {**copy.deepcopy(values), "program": program, "program_source": source,
                       "interval_s": float(values["interval_s"]), "program_s": len(program) * float(values["interval_s"]),
                       "stalls": [asdict(s) for s in stall.planned(steps)],
                       "program_needs": sorted({kind.needs for kind, _ in programs.kinds_in(program) if kind.needs}),
                       "phases": phases, "rate": rate,
                       "crash_probability": float(values["crash_probability"]),
                       "sample_interval_s": float(values["sample_interval_s"]),
                       "resource_growth": growth_bounds(values["resource_growth"]),
                       "restart_backoff_s": float(values["restart_backoff_s"])})


def random_program(values: dict[str, Any]) -> list[str]:
    """The program of an empty ``program``, drawn from ``seed`` as param ``random_program`` asks: with faults, as long
    as the load (``records`` at ``rate``) unless it says how long."""
    shape = values["random_program"]
    faults, interval = shape.get("faults", []), float(values["interval_s"])
    steps = shape.get("steps") or (min(MAX_STEPS, math.ceil(values["records"] / values["rate"] / interval))
                                   if faults and values["rate"] else None)
    return programs.random_program(values["seed"], values["instances"], steps, values["brokers"], faults,
                                   shape.get("every", 2), interval)


TOKEN_AT = re.compile(r"token '[^']*' at position \d+: ")  # how a refusal names the token it is about


def drawn(errors: list[str], source: str) -> list[str]:
    """The refusals of a program's tokens, for a program the run drew (``source``: ``random(seed=N)``) in the name of
    the param that asked for it: nobody wrote the token."""
    if source == "given":
        return errors
    named = (f"random_program: the program drawn as {source} asks for what this run cannot do: "
             f"{re.sub(TOKEN_AT, '', e.removeprefix('program: '))}; leave that kind out of random_program.faults"
             if e.startswith("program: ") else e for e in errors)
    return list(dict.fromkeys(named))  # one line for the kind, not one for each of its tokens


def random_program_errors(values: dict[str, Any]) -> list[str]:
    """The kinds asked of the random program that the run has nothing to draw them on."""
    asked, brokers = values["random_program"].get("faults", []), values["brokers"]
    needs_two = {"broker": "takes one broker of two or more down", "broker-cut": "cuts one broker of two or more from "
                 "the others"}
    return [f"random_program: faults: '{kind}' {does}; this run has {brokers} (param brokers)"
            for kind, does in needs_two.items() if kind in asked and brokers < 2]


def start_releases(values: dict[str, Any]) -> list[Releases]:
    """What each cluster of the run starts on, for the checks of the program's upgrades: its brokers' release (where
    the run starts its brokers; one per cluster of a broker version matrix), and the app's version with the rule of
    an instance's move to another (``app_moves``)."""
    app, move = app_moves(values)
    if not registry.kind(values["backend"]).broker_faults:  # its bN^V steps are refused for the backend
        return [Releases(None, app, move)]
    return [Releases(version, app, move) for version in kafka_jars.broker_versions(values)[1]]


def app_moves(values: dict[str, Any]) -> tuple[str, Callable[[str, str], str]]:
    """The version the app under test starts on and why an instance cannot move from one version to another ("" when
    it can; the program's ``N^V``): a profile's app between its ``versions``; the Kafka Streams app between Kafka
    Streams releases as Kafka Streams supports (``streams.move_problem``), each built before the run."""
    raw = values["app_profile"]
    if raw:
        listed = raw.get("versions") if isinstance(raw, dict) else None
        versions = [v for v in listed if isinstance(v, str)] if isinstance(listed, list) else []
        if not versions:
            return "", lambda _current, _to: ("app_profile lists no versions to move its instances between (give "
                                              "it versions: the first is the one it starts on)")
        return versions[0], lambda _current, to: "" if to in versions else (
            f"{to!r} is not one of app_profile's versions (allowed: {', '.join(versions)})")
    if values["app_command"]:
        return "", lambda _current, _to: ("app_command's app has no versions to move to (N^V moves the reference apps "
                                          "or an app_profile's app between its versions)")
    if values["app"] == "worker":
        return worker_moves(values["worker_versions"])
    versions = values["streams_versions"] or [values["streams_version"]]
    designs = values["workflow_designs"] if values["topology"] == "workflow" else []
    if len(versions) > 1 or values["variants"] or len(designs) > 1:
        return "", lambda _current, _to: ("the run compares several Kafka Streams apps side by side (streams_versions, "
                                          "variants or workflow_designs); an upgrade moves the one app of a run")

    def move(current: str, to: str) -> str:
        problem = streams.move_problem(current, to)
        if not problem and values["group_protocol"] == "streams" and release_of(to) < STREAMS_PROTOCOL_SINCE:
            problem = (f"group_protocol 'streams' needs Kafka Streams {'.'.join(map(str, STREAMS_PROTOCOL_SINCE))} or "
                       f"later, not {to}")
        return problem

    return versions[0], move


def worker_moves(versions: list[str]) -> tuple[str, Callable[[str, str], str]]:
    """The reference worker moves between confluent-kafka releases (each a virtualenv built before the run; the client
    keeps no state of its own, so any release moves to any other), from the one ``worker_versions`` names."""
    if len(versions) != 1:
        why = ("it runs this interpreter's confluent-kafka: set worker_versions to the one release it starts on" if not
               versions else "the run compares several releases side by side (worker_versions); an upgrade moves the "
               "one app of a run")
        return "", lambda _current, _to: f"the reference worker cannot move: {why}"
    return versions[0], lambda _current, to: releases.problem(to, "the release moved to")


def load_errors(values: dict[str, Any], phases: list[dict[str, Any]], program_s: float, rate: float) -> list[str]:
    """The load bounded as a whole, not field by field: its rate, how long it lasts (every phase one after the
    other, after the program), and the bytes it writes."""
    errors = []
    if not values["rate"] and not values["phases"] and rate > MAX_RATE:
        errors.append(f"records: {values['records']} over the program's {program_s:g} s is {rate:,.0f} records/s; at "
                      f"most {MAX_RATE:,} (set rate, or lengthen the program)")
    timed = [p for p in phases if p["rate"]] if values["phases"] or values["rate"] else []
    producing = sum(p["records"] / p["rate"] for p in timed)
    if program_s + producing > MAX_RUN_S:
        what = (f"phases: their {sum(p['records'] for p in timed)} records at their rates" if values["phases"]
                else f"rate: {values['records']} records at {rate:g} records/s")
        errors.append(f"{what} take {producing / 86_400:.1f} days after a program of {program_s:g} s; a run's load "
                      f"may last {MAX_RUN_S // 86_400} days at most; raise the rate or lower the records")
    return errors


def record_size_errors(values: dict[str, Any]) -> list[str]:
    """One input record, in the app's input format, must be one Kafka takes by default."""
    if not values["payload_bytes"]:
        return []
    app = profiles.Profile.of(values["app_profile"])
    size = generator.largest_record_bytes(values["records"], values["keys"], values["payload_bytes"], app.input.key,
                                          app.input.value, values["partitions"])
    if size + generator.FRAMING_BYTES <= generator.MESSAGE_MAX_BYTES:
        return []
    return [f"payload_bytes: {values['payload_bytes']} makes the input's largest record {size:,} bytes; Kafka's "
            f"clients take at most {generator.MESSAGE_MAX_BYTES:,} bytes a record, framing included (librdkafka's "
            "message.max.bytes; the brokers' max.message.bytes is 1,048,588): lower payload_bytes"]


def deployer_only(name: str, backend: str) -> bool:
    """Whether only the deployment sets param ``name`` of a run on ``backend``: quotas and kept topics on a shared
    (external) cluster reach other people's clients and stay; on the run's own broker they shape the soak."""
    declared = PARAMS[name].deployer if name in PARAMS else False
    return declared is True or (declared == SHARED and registry.shared(backend))


def trigger_errors(conf: dict[str, Any], deployed: dict[str, Any], allow: dict[str, list[Any]]) -> list[str]:
    """A trigger conf's changes to what only the deployment may set (``deployed``: the DAG's param defaults;
    ``allow``: values the deployment lets a trigger choose, per param)."""
    errors = []
    for name in DEPLOYER_ONLY:
        if name not in conf or conf[name] == deployed.get(name) or conf[name] in allow.get(name, []):
            continue
        if not deployer_only(name, conf.get("backend", deployed.get("backend", DEFAULTS["backend"]))):
            continue  # judged by the backend the run will use: a trigger that may choose external gets its rules
        errors.append(f"{name}: decides what runs where or with which credentials, so only whoever deploys the suite "
                      f"sets it: in {WHERE_DEPLOYER_SETS}; a trigger conf may not change it")
    return errors


def split(conf: dict[str, Any], backend: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what only the deployment sets, the rest) of a run on ``backend``: how the CLI, run by whoever owns the
    machine, passes each part (the rest as a trigger conf, which overrides a scenario file's defaults)."""
    deployment = {k: v for k, v in conf.items() if deployer_only(k, backend)}
    return deployment, {k: v for k, v in conf.items() if k not in deployment}


STREAMS_ONLY = ("state_write_bytes", "rocksdb_write_buffer_bytes")  # stores of the Kafka Streams app alone
# Kafka Streams settings the run decides for every app it runs (a variant may not change them).
RUN_STREAMS_CONFIG = ("application.id", "bootstrap.servers", "client.id", "state.dir", "processing.guarantee",
                      "group.protocol")
# Kafka Streams settings a param of the run sets: one home each, so that what admission checks (the client ids a quota
# names, the commit interval against the transaction timeout, the rules of group_protocol streams) is what runs.
PARAM_STREAMS_CONFIG = {
    "num.stream.threads": "threads", "num.standby.replicas": "standbys", "commit.interval.ms": "commit_interval_ms",
    "acceptable.recovery.lag": "acceptable_recovery_lag", "max.warmup.replicas": "max_warmup_replicas",
    "statestore.cache.max.bytes": "cache_entries", "cache.max.bytes.buffering": "cache_entries",
    **{f"{prefix}{name}": "session_timeout_ms" for prefix in ("", "consumer.", "main.consumer.")
       for name in ("session.timeout.ms", "heartbeat.interval.ms")}}
# Kafka Streams under exactly_once_v2 gives its producers this transaction timeout unless told otherwise.
STREAMS_TRANSACTION_TIMEOUT_MS = 10_000
TRANSACTION_TIMEOUT_KEYS = ("producer.transaction.timeout.ms", "transaction.timeout.ms")
# The brokers' transaction.max.timeout.ms by default (param broker_config may set it): a producer asking for more is
# refused at initTransactions.
BROKER_MAX_TRANSACTION_TIMEOUT_MS = 900_000


def streams_config_errors(where: str, config: dict[str, Any]) -> list[str]:
    """Kafka Streams settings of the run's (param streams_config) or a control's: any on the allow-list
    (``allowed_settings``) but the run's own and those a param sets, each a value the app's ``--config`` can carry."""
    errors, listed = [], {}
    for key, value in config.items():
        if key in RUN_STREAMS_CONFIG:
            errors.append(f"{where} {key!r} is the run's to set (allowed: the other settings of docs/scenarios.md's list"
                          + ("; the rebalance protocol is param group_protocol)" if key == "group.protocol" else ")"))
        elif key in PARAM_STREAMS_CONFIG:
            errors.append(f"{where} {key!r} is param {PARAM_STREAMS_CONFIG[key]}'s to set: set that param (its "
                          "checks then hold for what runs)")
        else:
            listed[key] = value
    return errors + allowed_settings.problems(where, listed)


def transaction_timeout_errors(values: dict[str, Any]) -> list[str]:
    """Each Kafka Streams app of the run (every control) commits within its producers' transaction timeout, which
    the brokers allow: Kafka Streams refuses a commit interval longer than the timeout at start, and a broker a
    timeout above its transaction.max.timeout.ms at the first transaction; either would fail only after
    provisioning."""
    controls = [("", values["streams_config"])] + [
        (f" (control {v['name']})", {**values["streams_config"], **v.get("streams_config", {})})
        for v in values["variants"]]
    errors = []
    try:
        broker_max = int(values["broker_config"].get("transaction.max.timeout.ms", BROKER_MAX_TRANSACTION_TIMEOUT_MS))
    except (TypeError, ValueError):
        return [f"broker_config: transaction.max.timeout.ms {values['broker_config']['transaction.max.timeout.ms']!r} "
                "is not a whole number of ms"]
    for control, config in controls:
        given = next((config[k] for k in TRANSACTION_TIMEOUT_KEYS if k in config), None)
        try:
            timeout = STREAMS_TRANSACTION_TIMEOUT_MS if given is None else int(given)
        except (TypeError, ValueError):
            errors.append(f"streams_config{control}: transaction.timeout.ms {given!r} is not a whole number of ms")
            continue
        if values["commit_interval_ms"] > timeout:
            said = "by default under exactly_once_v2" if given is None else "as set"
            errors.append(f"commit_interval_ms: {values['commit_interval_ms']} ms is longer than the Kafka Streams "
                          f"producers' transaction timeout{control}, {timeout} ms {said}; Kafka Streams refuses to "
                          "start so: lower commit_interval_ms, or set streams_config producer.transaction.timeout.ms "
                          f"to at least {values['commit_interval_ms']}")
        if registry.kind(values["backend"]).starts_brokers and timeout > broker_max:
            errors.append(f"streams_config{control}: transaction.timeout.ms {timeout} is above the run's brokers' "
                          f"transaction.max.timeout.ms ({broker_max}), which refuse it at the first transaction")
    return errors


# The feature of the brokers' each rebalance protocol needs, and the first release whose storage tool finalizes it (a
# cluster keeps the level it was formatted with through a rolling upgrade).
PROTOCOL_BROKERS_SINCE = {"consumer": ("group.version", (4, 0)), "streams": ("streams.version", STREAMS_PROTOCOL_SINCE)}


def streams_app_errors(values: dict[str, Any]) -> list[str]:
    """The reference apps' client settings: the Kafka Streams app's own (streams_config), and a rebalance protocol
    only where both the app and the brokers speak it (consumer for the worker, streams for Kafka Streams)."""
    streams = values["app"] == "streams" and not values["app_command"]
    protocol = values["group_protocol"]
    if (values["streams_config"] or protocol == "streams") and not streams:
        name = "streams_config" if values["streams_config"] else "group_protocol"
        return [f"{name}: a setting of the Kafka Streams reference app (set app to 'streams' and leave app_command "
                "empty)"]
    if protocol == "consumer" and (values["app"] != "worker" or values["app_command"]):
        return ["group_protocol: 'consumer' (KIP-848) is the reference worker's (app 'worker', no app_command); "
                "Kafka Streams takes 'streams'"]
    errors = streams_config_errors("streams_config:", values["streams_config"])
    if protocol in PROTOCOL_BROKERS_SINCE and registry.kind(values["backend"]).broker_faults:
        feature, since = PROTOCOL_BROKERS_SINCE[protocol]
        name, versions = kafka_jars.broker_versions(values)
        old = [v for v in versions if release_of(v) < since]
        if old:
            errors.append(f"group_protocol: {protocol!r} needs brokers of Apache Kafka {'.'.join(map(str, since))} "
                          f"or later, whose {feature} feature is 1: {name} {', '.join(old)} has not")
    if protocol == "consumer" and values["session_timeout_ms"] != DEFAULTS["session_timeout_ms"]:
        errors.append("group_protocol: under 'consumer' the brokers, not the app, set session_timeout_ms (the "
                      "group's consumer session timeout): leave session_timeout_ms at the default, or use "
                      "group_protocol 'classic'")
    if protocol == "streams":
        since = ".".join(map(str, STREAMS_PROTOCOL_SINCE))
        old = [v for v in values["streams_versions"] or [values["streams_version"]]
               if release_of(v) < STREAMS_PROTOCOL_SINCE]
        if old:
            errors.append(f"group_protocol: 'streams' needs Kafka Streams {since} or later (KIP-1071 is generally "
                          f"available from {since}; 4.1 had it as early access only): not {', '.join(old)}")
        brokers_set = [name for name in ("standbys", "session_timeout_ms") if values[name] != DEFAULTS[name]]
        if brokers_set:  # the app's num.standby.replicas and session.timeout.ms would be ignored without a word
            errors.append(f"group_protocol: under 'streams' the brokers, not the app, set {' and '.join(brokers_set)} "
                          "(the group's streams.num.standby.replicas and streams.session.timeout.ms): leave "
                          f"{' and '.join(brokers_set)} at the default, or use group_protocol 'classic'")
    return errors


def variant_errors(values: dict[str, Any]) -> list[str]:
    """Controls run beside the reference app (each version of the Kafka Streams app), with settings of their own: the
    worker's, a bug switch alone."""
    if values["app_command"]:
        return ["variants: run beside a reference app (leave app_command empty)"]
    worker = values["app"] == "worker"
    if worker and values["worker_versions"]:
        return ["variants: a run of the worker compares either confluent-kafka releases (worker_versions) or "
                "variants, not both"]
    if not worker and len(values["workflow_designs"]) > 1:
        return ["variants: a run compares either designs of the workflow engine or variants, not both"]
    names = [v["name"] for v in values["variants"]]
    errors = [f"variants: {names} names a variant twice"] if len(set(names)) != len(names) else []
    for variant in values["variants"]:
        where, config = f"variants: {variant['name']}: streams_config", variant.get("streams_config", {})
        if worker:
            errors += [f"{where} is the Kafka Streams app's (app=streams); the worker's variants differ by their bug "
                       "switch"] if config else []
        else:
            errors.extend(streams_config_errors(where, config))
    return errors


# The first confluent-kafka release whose librdkafka has the consumer group protocol (KIP-848) generally available.
CONSUMER_PROTOCOL_SINCE = (2, 12)


def worker_errors(values: dict[str, Any]) -> list[str]:
    """The reference worker's own params: its confluent-kafka releases run in virtualenvs of this machine (runtime
    local), and the example's commits follow its records, not a clock. Whether PyPI serves a release is checked when
    its virtualenv is built (``preflight``), before anything starts."""
    worker = values["app"] == "worker" and not values["app_command"]
    named = [name for name in ("worker_versions", "worker_style") if values[name] != DEFAULTS[name]]
    if named and not worker:
        return [f"{named[0]}: a setting of the reference worker (set app to 'worker' and leave app_command empty)"]
    errors = []
    if values["worker_versions"] and values["runtime"] != "local":
        errors.append(f"worker_versions: a confluent-kafka release runs in a virtualenv of this machine (runtime "
                      f"'local'); runtime {values['runtime']!r} runs the worker image with the release it was built "
                      "with: leave worker_versions empty (or use runtime 'local')")
    since = ".".join(map(str, CONSUMER_PROTOCOL_SINCE))
    old = [v for v in values["worker_versions"] if release_of(v) < CONSUMER_PROTOCOL_SINCE]
    if values["group_protocol"] == "consumer" and old:
        errors.append(f"group_protocol: 'consumer' (KIP-848) is generally available from confluent-kafka {since} on "
                      f"(librdkafka {since}): not {', '.join(old)} of worker_versions; use group_protocol 'classic'")
    if values["worker_style"] == "example" and values["commit_interval_ms"] != DEFAULTS["commit_interval_ms"]:
        errors.append("commit_interval_ms: the example worker (worker_style 'example') commits every 100 records and "
                      "whenever it reached the end of every partition it holds, as confluent-kafka's example does, "
                      "not on a clock: leave commit_interval_ms at the default, or use worker_style 'reference'")
    return errors


def app_errors(values: dict[str, Any]) -> list[str]:
    """Settings the chosen app does not have."""
    if values["app_profile"]:
        return profile_errors(values)
    if values["streams_versions"] and (values["app"] != "streams" or values["app_command"]):
        return ["streams_versions: a version matrix runs the Kafka Streams reference app (set app to 'streams' and "
                "leave app_command empty)"]
    errors = worker_errors(values) + streams_app_errors(values) + (variant_errors(values) if values["variants"] else [])
    if not errors and values["app"] == "streams" and not values["app_command"]:
        errors = transaction_timeout_errors(values)
    if errors:
        return errors
    if values["topology"] != "id-assignment" and (values["app"] != "streams" or values["app_command"]):
        return [f"topology: {values['topology']!r} is a topology of the Kafka Streams reference app (set app to "
                "'streams' and leave app_command empty)"]
    if len(values["workflow_designs"]) > 1 and values["topology"] != "workflow":
        return ["workflow_designs: compares designs of the workflow engine (set topology to 'workflow')"]
    if len(values["workflow_designs"]) > 1 and values["streams_versions"]:
        return ["workflow_designs: a run compares either designs or Kafka Streams versions (streams_versions), not "
                "both: leave one of them with a single value"]
    if values["topology"] != "id-assignment" and values["state_write_bytes"]:
        return [f"state_write_bytes: is a store of the id-assignment topology; the {values['topology']} topology has "
                "none"]
    if values["crash_probability"] and (values["app"] != "worker" or values["app_command"]):
        return [f"crash_probability: {values['crash_probability']:g} makes the reference worker crash itself (app "
                "'worker', no app_command); another app has no such switch: crash it with the program's kN steps"]
    if values["app_command"]:
        return []
    if values["app"] == "worker" and values["standbys"] > 1:
        return [f"standbys: the reference worker keeps 0 or 1 standby replicas (got {values['standbys']}); "
                "app=streams takes any number"]
    given = [("bug", values["bug"]), *((f"variants: {v['name']}: bug", v["bug"]) for v in values["variants"] if "bug" in v)]
    if values["app"] == "streams" and (wrong := next(((w, b) for w, b in given if b not in STREAMS_BUGS), None)):
        return [f"{wrong[0]}: {wrong[1]!r} is a switch of the reference worker (app=worker); the Kafka Streams app "
                f"(app=streams) runs Kafka Streams as released, with bug switches {', '.join(STREAMS_BUGS)}"]
    planted = sorted({values["bug"], *(v.get("bug", "none") for v in values["variants"])} - {"none"})
    if values["app"] == "streams" and planted and values["topology"] != "id-assignment":
        return [f"bug: the Kafka Streams app's {planted[0]!r} is in its id-assignment topology (got topology "
                f"{values['topology']!r})"]
    if values["app"] == "worker" and (setting := next((name for name in STREAMS_ONLY if values[name]), "")):
        return [f"{setting}: is a setting of the Kafka Streams app (app=streams); the reference worker has no "
                "such store"]
    return []


def profile_errors(values: dict[str, Any]) -> list[str]:
    """What a run of a team's own app (``app_profile``) cannot also be given: another app, or settings that only the
    reference apps read."""
    errors = [f"{name}: the app_profile's command starts the app under test; leave {name} empty"
              for name in ("app_command", "app_image") if values[name]]
    errors += [f"{name}: is a setting of the reference apps (got {values[name]!r}); a profile's app takes its settings "
               "from app_profile.client_properties (Kafka Streams' num.standby.replicas, statestore.cache.max.bytes, "
               "session.timeout.ms, ...)" for name in REFERENCE_ONLY if values[name] != DEFAULTS[name]]
    return errors


def expand_quotas(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The quotas with ``{app_id}`` in a client id made one per application id of the run (each version of a matrix
    has its own), so a scenario names its app's clients without knowing which versions a trigger compares."""
    expanded = []
    for quota in values["quotas"]:
        if APP_ID in quota["client_id"]:
            expanded += [{**quota, "client_id": quota["client_id"].replace(APP_ID, app)}
                         for app in subjects.quoted_app_ids(values)]
        else:
            expanded.append(quota)
    return expanded


def quota_errors(values: dict[str, Any]) -> list[str]:
    """A quota on the run's own broker throttles the app under test: one that names none of the clients the suite
    knows its app has would throttle nothing (an external cluster's quotas are its deployer's to choose; a team's
    app's clients are its own)."""
    known = None if registry.shared(values["backend"]) else subjects.client_ids(values)
    if known is None:
        return []
    app = subjects.profile(values).title_or_name
    return [f"quotas: client_id {q['client_id']!r} is no client of the app under test ({app}, "
            f"{values['instances']} instances); its clients are {', '.join(known[:6])}"
            + (f" and {len(known) - 6} more of the same pattern" if len(known) > 6 else "")
            for q in values["quotas"] if q["client_id"] not in known]


def deployment_errors(values: dict[str, Any], program: list[str]) -> list[str]:
    """Backend/runtime params that contradict each other or the program."""
    errors = []
    backend, runtime = values["backend"], values["runtime"]
    for kind, tokens in programs.kinds_in(program):
        if kind.needs and not getattr(registry.kind(backend), kind.needs):
            errors.append(f"program: {tokens} {kind.needs_why}, which only {registry.able(kind.needs)} can do "
                          f"(backend is {backend!r})")
        if runtime not in getattr(kind, "runtimes", (runtime,)):  # a kind that names runtimes works on those alone
            errors.append(f"program: {tokens} {kind.needs_why}, which only runtime "
                          f"{' or '.join(map(repr, kind.runtimes))} can do (runtime is {runtime!r})")
        protocol = values["group_protocol"]
        if protocol not in getattr(kind, "group_protocols", (protocol,)):  # likewise a kind that names protocols
            errors.append(f"program: {tokens} {kind.needs_why}, which is read for group_protocol "
                          f"{' or '.join(map(repr, kind.group_protocols))} only (group_protocol is {protocol!r})")
    errors.extend(broker_settings.problems(values["broker_config"], registry.kind(backend).shared))
    able = registry.able("broker_faults")
    if not registry.kind(backend).broker_faults:
        if values["brokers"] != 1:
            errors.append(f"brokers: {values['brokers']} brokers are for {able}; backend {backend!r} "
                          "has its own (leave brokers at 1)")
        if values["kafka_versions"]:
            errors.append(f"kafka_versions: a broker version matrix starts a cluster of each release, which only "
                          f"{able} can do (backend is {backend!r}); leave kafka_versions empty")
        if values["transaction_version"] is not None:
            errors.append(f"transaction_version: {values['transaction_version']} is set when {able} formats "
                          f"its brokers' storage; backend {backend!r} has its own features (leave transaction_version "
                          "empty)")
    elif values["transaction_version"] is not None:
        name, versions = kafka_jars.broker_versions(values)
        old = [v for v in versions if release_of(v) < (4, 0)]
        if old:
            errors.append(f"transaction_version: the transaction.version feature is set by the storage tool of Apache "
                          f"Kafka 4.0 and later; {name} {', '.join(old)} formats none (3.x runs the classic transaction "
                          "protocol: leave transaction_version empty)")
    if runtime != "local" and values["restart"] != "never":
        errors.append(f"restart: {values['restart']!r} is the local runtime's restart policy; runtime {runtime!r} has "
                      "none yet (leave restart at 'never')")
    if runtime != "docker":
        for name in ("app_image", "app_env"):
            if values[name]:
                errors.append(f"{name}: is for runtime 'docker' (runtime is {runtime!r})")
    errors.extend(f"app_command: {part!r} {problem}; allowed: " + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                  + " as they are, without format spec or conversion (write {{ and }} for braces)"
                  for part in values["app_command"] if (problem := profiles.placeholder_problem(part, PLACEHOLDERS)))
    return errors


def whole_numbers(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` with each integral float made an int where its schema asks for an integer: JSON Schema counts 3.0
    as an integer, and what the plan feeds (``range``, Kafka's configs, the generator's ids) does not."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if isinstance(value, float) and "integer" in kinds and "number" not in kinds and value.is_integer():
        return int(value)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [whole_numbers(item, schema["items"]) for item in value]
    if isinstance(value, dict) and "properties" in schema:
        return {key: whole_numbers(item, schema["properties"].get(key, {})) for key, item in value.items()}
    return value


def numbers(value: Any, name: str = "") -> list[tuple[str, float]]:
    """Every float in the params (inside lists and objects too), with the param it belongs to."""
    if isinstance(value, float):
        return [(name, value)]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in numbers(item, name or key)]
    if isinstance(value, list):
        return [pair for item in value for pair in numbers(item, name)]
    return []
