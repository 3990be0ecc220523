"""The app instances of a run: start/stop/kill/pause/resume instance *n* on the run's runtime.

Instances run where param ``runtime`` says: ``local`` processes or ``docker`` containers, both behind the same
``Runtime`` interface (the load generator is the harness's, in ``load/process.py``). One log per instance per program
step (``logs/<app_id>-<n>.<step>.log``), as in the multi-runner reproduction, so what an instance did between two toggles
can be read on its own.

The app under test is whatever its profile (``app_profile``) says: a team's own app, or one of the suite's
(``clients/reference/profiles.py``: the Python worker, the Kafka Streams app of each version as a JVM, an
``app_command``), started the same way. It learns the run from the data contract's environment variables
(``SOAK_BOOTSTRAP_SERVERS``, ``SOAK_INPUT_TOPIC``, ``SOAK_INSTANCE``, …) or from the same names as ``{placeholders}``
in its command, from ``{properties_file}`` (a Java properties file of its client settings written for each start),
``{state_dir}`` and ``{topic:NAME}``, each of its topics by the name it knows it.

A matrix (``subjects.py``) runs one app per member (a version, a design, a control): "instance *n*" is then instance
*n* of every member, driven together (in parallel, so that each member's toggle lands at the planned moment).
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.backends.broker_matrix import carry
from kafka_soak.clients import profile as profiles
from kafka_soak.clients import subjects as run_subjects
from kafka_soak.clients.reference import streams
from kafka_soak.clients.subjects import Subject
from kafka_soak.infra import kafka_io
from kafka_soak.infra.cluster import Cluster
from kafka_soak.infra.connection import app_secrets, client_settings, mask
from kafka_soak.infra.network import RunNetwork, instance_host
from kafka_soak.infra.runtime import Runtime
from kafka_soak.infra.runtime.docker import DockerContainers
from kafka_soak.infra.runtime.local import LocalProcesses
from kafka_soak.infra.runtime.registry import ProcessRecord
from kafka_soak.infra.runtime.spawn import Restart
from kafka_soak.shared import java_client, resources, rundir, stalls
from kafka_soak.shared.rundir import journal
from kafka_soak.toolchain import byteman, stall_agent

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)
# Of a properties file's name, what its run's and its app's names may take: the name stays within the 255 bytes a file
# system takes, and a run's usual name (a manual run's is 49 characters) is whole in it.
RUN_NAME_CHARS, APP_ID_CHARS = 64, 100
# Where a profile's app finds its properties file in a container (put there before it starts, gone with it).
CONTAINER_PROPERTIES = "/etc/kafka-soak/app.properties"
# The topics of the suite's data contract an app learns by name (SOAK_<NAME>_TOPIC, {<name>_topic}).
CONTRACT_TOPICS = ("output", "changelog", "assertions", "executions", "tasks", "results", "counts", "sums")



def contract(cluster: Cluster, subject: Subject, instance: int | str, step: int | str) -> dict[str, str]:
    """What an instance of the app under test needs to know of the run (see ``app_command``): its subject's topic of
    each name of the suite's data contract ("" where its app has none)."""
    return {"bootstrap_servers": cluster.bootstrap_servers, "app_id": subject.app_id, "instance": str(instance),
            "step": str(step), "input_topic": cluster.topics["input"],
            **{f"{name}_topic": subject.topic(name) for name in CONTRACT_TOPICS}}


class Instances:
    def __init__(self, run_dir: Path, cluster: Cluster, plan: Plan, subjects: list[Subject],
                 client_settings: dict[str, Any] | None = None) -> None:
        self.run_dir, self.cluster, self.plan, self.subjects = run_dir, cluster, plan, subjects
        self.client_settings = client_settings
        self.app = run_subjects.profile(plan)
        self.client_env = kafka_io.settings_env(client_settings)
        self.stalls = [stalls.Stall(**s) for s in plan.get("stalls", [])]
        self.runtime: Runtime = (
            DockerContainers(run_dir, self.app.image_of(subjects[0].version if subjects else ""), plan["app_env"],
                             plan["docker_url"], plan["docker_conn_id"] or None, self.app.image_param)
            if plan["runtime"] == "docker" else LocalProcesses(run_dir))

    @classmethod
    def for_run(cls, run_dir: Path, cluster: dict[str, Any], plan: Plan) -> Instances:
        """From the XComs of ``provision`` and ``check_params``, with the cluster's security settings; the secrets
        written into the app's command or environment are masked in this task's log, as the connection's are."""
        mask(app_secrets(dict(plan)))
        return cls(run_dir, Cluster(**cluster), plan, run_subjects.recorded(cluster), client_settings(cluster))

    def only(self, subject: Subject) -> Instances:
        """The instances of one subject of a matrix."""
        return Instances(self.run_dir, self.cluster, self.plan, [subject], self.client_settings)

    def _each(self, action, instance: int) -> list[Any]:
        """``action(subject, instance)`` for every subject, side by side."""
        if len(self.subjects) == 1:
            return [action(self.subjects[0], instance)]
        with ThreadPoolExecutor(len(self.subjects)) as pool:
            return list(pool.map(carry(lambda s: action(s, instance)), self.subjects))

    def command(self, subject: Subject, instance: int, step: int | str, properties_file: Path | None = None) -> list[str]:
        """The app's command and its member's own options, their placeholders filled: the contract's values, the
        instance's ``{properties_file}`` and ``{state_dir}``, the member's ``{version}``, and ``{topic:NAME}``."""
        values = {**contract(self.cluster, subject, instance, step), profiles.PROPERTIES_FILE: str(properties_file),
                  profiles.VERSION: self.version(subject, instance), profiles.STATE_DIR: self.state_dir(subject, instance)}
        return [profiles.render(part, values, subject.topics) for part in [*self.app.command, *subject.args]]

    def image(self, subject: Subject, instance: int) -> str | None:
        """The container image of an instance (runtime=docker): its version's."""
        return self.app.image_of(self.version(subject, instance)) if self.plan["runtime"] == "docker" else None

    @property
    def versions_file(self) -> Path:
        return self.run_dir / rundir.APP_VERSIONS

    def version(self, subject: Subject, instance: int) -> str:
        """The version an instance runs: the one the program last moved it to (``N^V``), else its subject's. Kept in
        the run directory, as a host keeps what was deployed on it through restarts (the program's, the drain's, a
        restart policy's)."""
        return (rundir.read_json(self.versions_file) or {}).get(subject.process(instance), subject.version)

    def upgrade(self, instance: int, version: str, step: int | str) -> tuple[int | None, ProcessRecord | None]:
        """``N^V``: stop the instance gracefully and start it again on ``version`` (of every subject); the exit code
        and the new process of the first subject's."""
        code = self.stop(instance)
        moved = {**(rundir.read_json(self.versions_file) or {}), **{s.process(instance): version for s in self.subjects}}
        rundir.write_json(self.versions_file, moved)
        return code, self.start(instance, step)

    def state_dir(self, subject: Subject, instance: int) -> str:
        """The instance's own directory for its state: in the run directory, kept across its restarts as on a real
        host; in a container, the container's."""
        if self.plan["runtime"] == "docker":
            return streams.CONTAINER_STATE_DIR
        return str(self.run_dir / rundir.STATE / subject.process(instance))

    def properties(self, subject: Subject, instance: int) -> str:
        """A profile's app's client settings as a Java properties file: its group (``application.id`` and
        ``group.id``; ``<group>-<version>`` in a matrix), a ``client.id`` per instance (``<group>-<n>``, which a quota
        can name), a Kafka Streams
        ``state.dir`` of its own (in the run directory, kept across restarts as on a real host; in a container, the
        container's), its
        ``client_properties``, then what the run decides: the bootstrap servers and the cluster's security settings."""
        settings = {"application.id": subject.app_id, "group.id": subject.app_id, "client.id": f"{subject.app_id}-{instance}",
                    "state.dir": self.state_dir(subject, instance),
                    **{k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in self.app.client_properties.items()},
                    "bootstrap.servers": self.cluster.bootstrap_servers,
                    **java_client.java_settings(self.client_settings or {})}
        return java_client.properties(settings)

    def private_dir(self, subject: Subject, instance: int) -> Path:
        """A directory of one start of a local instance, readable by this user only, outside the run directory and
        named after the run (so a leak points at its run), which its supervisor removes when the instance ends for
        good: its properties file (which may hold the cluster's credentials) and its temporary files (``TMPDIR``, a
        JVM's ``java.io.tmpdir``). A JVM extracts native libraries there, RocksDB's 15 MB at each start of a Kafka
        Streams app, and deletes them only when it exits cleanly: each kill -9 left one in the machine's /tmp."""
        return Path(tempfile.mkdtemp(prefix=f"{self.private_prefix}{subject.app_id[:APP_ID_CHARS]}-{instance}-"))

    def write_properties(self, subject: Subject, instance: int, private: Path) -> Path:
        """The properties file of one start of a profile's app, in the start's private directory."""
        path = private / "app.properties"
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as fh:
            fh.write(self.properties(subject, instance))
        return path

    def remove_private_dirs(self) -> None:
        """Remove the private directories of the run's instances still on disk once none runs: each instance's
        supervisor removes its own when the instance ends, but a supervisor killed with SIGKILL cannot, and the
        directory may hold the cluster's password."""
        for path in Path(tempfile.gettempdir()).glob(f"{glob.escape(self.private_prefix)}*"):
            shutil.rmtree(path, ignore_errors=True)
            log.warning("removed %s, left by an instance whose supervisor did not end cleanly", path)

    @property
    def private_prefix(self) -> str:
        """What the names of this run directory's private directories start with: its name, and a digest of its path (a
        member of a broker version matrix is named after its release alone)."""
        digest = hashlib.sha256(str(self.run_dir.resolve()).encode()).hexdigest()[:8]
        return f"soak-{self.run_dir.name[:RUN_NAME_CHARS]}-{digest}-"

    def environment(self, subject: Subject, instance: int, step: int | str, temp_dir: Path | None = None
                    ) -> dict[str, str]:
        """The contract as ``SOAK_*`` variables, plus the client's security settings (never on a command line), and
        Kafka's config providers off should the app be a JVM (any JVM reads ``JAVA_TOOL_OPTIONS``), with its collections
        logged where the resource sampler reads its heap (a local process: a container has no run directory). A local
        start's temporary files go to ``temp_dir`` (its private directory). An instance the program stalls gets its
        stall directory, and a JVM app the agent that stalls it."""
        values = contract(self.cluster, subject, instance, step)
        gc_log = resources.gc_option(self.run_dir) if self.plan["runtime"] == "local" else None
        temp = {"TMPDIR": str(temp_dir)} if temp_dir else {}
        java_options = [java_client.NO_CONFIG_PROVIDERS, *([gc_log] if gc_log else []),
                        *([f"-Djava.io.tmpdir={temp_dir}"] if temp_dir and java_client.is_option(str(temp_dir)) else [])]
        planned = [s for s in self.stalls if s.instance == instance]
        stalling = {stalls.DIR_ENV: str(self.stall_dir(subject, instance))} if planned else {}
        if planned and self.app.stall == stalls.JVM:
            java_options.append(stall_agent.java_options(byteman.agent_jar(), self.stall_dir(subject, instance),
                                                         planned))
        return {**{f"SOAK_{k.upper()}": v for k, v in values.items()}, **self.client_env, **stalling, **temp,
                "JAVA_TOOL_OPTIONS": " ".join(java_options)}

    def stall_dir(self, subject: Subject, instance: int) -> Path:
        """Where the program arms the stalls of one instance and the instance traces them (``shared/stalls.py``)."""
        return self.run_dir / rundir.STALLS / subject.process(instance)

    def stall(self, stall: stalls.Stall) -> None:
        """Arm ``stall`` in its instance of every subject: the first of its threads to reach the point stalls."""
        for subject in self.subjects:
            stalls.arm(self.stall_dir(subject, stall.instance), stall)
            journal(self.run_dir, "stall-armed", instance=stall.instance, subject=subject.name, step=stall.step,
                    point=stall.point, seconds=stall.seconds)

    def stall_dirs(self) -> list[tuple[Subject, int, Path]]:
        """Each instance's stall directory that exists, with its subject and instance."""
        return [(s, n, self.stall_dir(s, n)) for s in self.subjects for n in range(1, self.plan["instances"] + 1)
                if self.stall_dir(s, n).is_dir()]

    def is_running(self, instance: int) -> bool:
        return any(self.runtime.is_alive(s.process(instance)) for s in self.subjects)

    def start(self, instance: int, step: int | str) -> ProcessRecord | None:
        """Start ``instance`` (of every subject) unless it already runs (a retried step converges); returns the
        first subject's record."""
        return self._each(lambda s, n: self._start(s, n, step), instance)[0]

    def _start(self, subject: Subject, instance: int, step: int | str) -> ProcessRecord | None:
        name = subject.process(instance)
        if self.runtime.is_alive(name):
            log.info("%s already running", subject.label(instance))
            return self.runtime.record(name)
        log_path = self.run_dir / "logs" / f"{subject.app_id}-{instance}.{step}.log"
        restart = Restart(self.plan["restart_backoff_s"], {"instance": instance, "subject": subject.name,
                                                           "step": str(step), "log": log_path.name}) \
            if self.plan["restart"] == "on-failure" else None
        private, files, properties_file = None, None, None
        if self.plan["runtime"] == "docker":
            properties_file = Path(CONTAINER_PROPERTIES)
            files = {CONTAINER_PROPERTIES: self.properties(subject, instance)}
        else:
            private = self.private_dir(subject, instance)
            properties_file = self.write_properties(subject, instance, private) if self.app.takes_properties else None
        command = self.command(subject, instance, step, properties_file)
        network = RunNetwork.load(self.run_dir)  # a run whose program cuts links: the instance's host is its own
        command = network.enter(instance_host(instance), command) if network else command
        try:
            with rundir.starting(self.run_dir, subject.label(instance)):
                record = self.runtime.start(name, command, log_path,
                                            step=str(step), extra_env=self.environment(subject, instance, step, private),
                                            image=self.image(subject, instance), restart=restart, remove_after=private,
                                            files=files)
        except BaseException:
            if private is not None:
                shutil.rmtree(private, ignore_errors=True)
            raise
        journal(self.run_dir, "start", instance=instance, subject=subject.name, step=str(step), log=log_path.name,
                pid=record.pid)
        return record

    def stop(self, instance: int, timeout: float = 30.0) -> int | None:
        """Graceful stop; the exit code (of the first subject's instance)."""
        return self._each(lambda s, n: self._end(s, n, "stop", timeout), instance)[0]

    def kill(self, instance: int) -> int | None:
        return self._each(lambda s, n: self._end(s, n, "kill"), instance)[0]

    def _end(self, subject: Subject, instance: int, how: str, timeout: float = 30.0) -> int | None:
        name = subject.process(instance)
        if how == "stop" and not self.runtime.is_alive(name):
            log.info("%s already stopped", subject.label(instance))
            return None
        record = self.runtime.record(name)
        asked = time.time()  # the end of the process's running life: what it does after is its shutdown
        code = self.runtime.stop(name, timeout) if how == "stop" else self.runtime.kill(name)
        journal(self.run_dir, how, instance=instance, subject=subject.name, exit_code=code,
                pid=record.pid if record else None, asked=round(asked, 3))
        return code

    def pause(self, instance: int) -> bool:
        return self._signal(instance, paused=True)

    def resume(self, instance: int) -> bool:
        return self._signal(instance, paused=False)

    def _signal(self, instance: int, paused: bool) -> bool:
        def one(subject: Subject, n: int) -> bool:
            done = (self.runtime.pause if paused else self.runtime.resume)(subject.process(n))
            journal(self.run_dir, "pause" if paused else "resume", instance=n, subject=subject.name)
            return done

        return all(self._each(one, instance))

    def record(self, instance: int) -> ProcessRecord | None:
        return self.runtime.record(self.subjects[0].process(instance))

    def lives(self, instance: int) -> dict[str, ProcessRecord]:
        """The current life of ``instance`` in each subject where it is alive, by subject name ("" alone)."""
        return {s.name: record for s in self.subjects
                if self.runtime.is_alive(s.process(instance)) and (record := self.runtime.record(s.process(instance)))}

    def sync_logs(self) -> None:
        """Bring the instances' output so far into their step logs (containers keep it inside)."""
        self.runtime.collect_logs()

    def running(self) -> list[int]:
        """Instances alive (paused ones included) in any subject."""
        return [n for n in range(1, self.plan["instances"] + 1) if self.is_running(n)]

    def paused(self) -> list[int]:
        return [n for n in self.running() if any(self.runtime.is_paused(s.process(n)) for s in self.subjects)]

    def stop_all(self, timeout: float = 30.0) -> dict[str, int | None]:
        """Stop every instance still running, all at once (a Kafka Streams close can take its whole timeout);
        returns their exit codes. Then whatever is left of them (with Docker: every container of the run, logs
        copied first) is removed."""
        alive = [(s, n) for s in self.subjects for n in range(1, self.plan["instances"] + 1)
                 if self.runtime.is_alive(s.process(n))]
        with ThreadPoolExecutor(max(1, len(alive))) as pool:
            futures = {s.process(n): pool.submit(carry(self._end), s, n, "stop", timeout) for s, n in alive}
        codes, errors = {}, {}
        for name, future in futures.items():  # one instance that fails to stop stops none of the others
            try:
                codes[name] = future.result()
            except Exception as exc:
                errors[name] = exc
                try:
                    self.runtime.kill(name)
                except Exception as kill_error:
                    log.error("could not kill %s either: %s", name, kill_error)
        self.runtime.clean_up()
        self.remove_private_dirs()
        if errors:
            raise RuntimeError("could not stop " + "; ".join(f"{name}: {exc}" for name, exc in errors.items())
                               + " (killed instead)")
        return codes
