"""The ``local`` Kafka backend (default): a real Apache Kafka KRaft cluster the run starts itself.

Each node is a JVM running ``kafka.Kafka`` from the jars of ``kafka_version`` (``kafka_jars``), as broker and
controller at once, listening on loopback ports of its own, with its data in the run directory
(``kafka/node-<n>/``) and its log in ``logs/kafka-<n>.log``. One node, or three with replication factor 3 and
``min.insync.replicas=2`` for the run's and the internal topics, as a production cluster would have. A run whose
program cuts links (``nN-``, ``nbN-``) puts each node in a network namespace of its own (``infra.network``),
listening and advertised on its address there, its controller listener too. The nodes
are registered in the run's process registry like every other process of the run, so a retried task finds
them, the program's ``bN-`` kills node N (SIGKILL) and ``bN+`` starts it again on its data, and release stops
them all. Quotas are set with Kafka's own ``ConfigCommand`` from the same jars.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import socket
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.backends import broker_settings, kafka_jars, quota_meter
from kafka_soak.backends import quotas as soak_quotas
from kafka_soak.backends.broker_matrix import carry
from kafka_soak.backends.kafka_releases import release_of
from kafka_soak.infra import kafka_io
from kafka_soak.infra.cluster import Cluster, topic_names
from kafka_soak.infra.network import NetworkError, RunNetwork, broker_host
from kafka_soak.infra.network import problem as network_problem
from kafka_soak.infra.network import release as release_network
from kafka_soak.infra.runtime.local import LocalProcesses
from kafka_soak.params import KAFKA_VERSION
from kafka_soak.shared import java_client, resources, rundir
from kafka_soak.shared.stalls import Stall, broker_dir
from kafka_soak.toolchain import byteman, stall_agent

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

log = logging.getLogger(__name__)

BROKER_HEAP = "512m"
# Internal topics sized as Kafka's own integration tests size them (EmbeddedKafkaCluster): fewer partitions
# than the production default of 50 make the first group join and transaction seconds faster on a small host.
INTERNAL_TOPIC_PARTITIONS = 5
# A broker killed (bN-, kill -9) recovers at its start every segment of each partition past its last flushed point,
# which advances when a segment rolls. With Kafka's 1 GiB segments nothing rolls in a soak, so each restart re-reads the
# whole log: after 1 h 43 min of a night at 1 000 records/s broker 3 spent 98 s of its 160 s restart recovering 1.8 GB
# (32 s at 9 minutes; a load average near 15). With 8 MiB segments a restart reads about one segment per partition,
# however long the run.
SEGMENT_BYTES = 8 * 2**20
PORT_ATTEMPTS = 3  # fresh starts on other ports when a chosen port was taken meanwhile


def free_ports(count: int) -> list[int]:
    """Ports free on loopback now (held open together, so they are distinct)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def new_cluster_id() -> str:
    """What ``kafka-storage random-uuid`` prints: 16 random bytes, URL-safe base64 without padding, drawn again
    when it starts with "-" (as Kafka's ``Uuid.randomUuid`` does: the tools would take it for an option)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


@dataclass(frozen=True)
class Node:
    node_id: int
    port: int
    controller_port: int
    jmx_port: int  # loopback only (its namespace's, see host): the quota meter reads the broker's quota metrics there
    host: str = "127.0.0.1"  # where it listens: loopback, or its address in a network namespace of the run's

    @property
    def name(self) -> str:
        return f"kafka-{self.node_id}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Layout:
    """The cluster a run starts: fixed at provision, kept in ``kafka/layout.json`` so a restarted node gets its
    own ports and data back."""

    version: str
    cluster_id: str
    nodes: tuple[Node, ...]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.address for node in self.nodes)

    @property
    def replication_factor(self) -> int:
        return min(3, len(self.nodes))

    @property
    def min_insync_replicas(self) -> int:
        return 2 if len(self.nodes) >= 3 else 1

    def server_properties(self, node: Node, data_dir: Path) -> dict[str, str]:
        voters = ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in self.nodes)
        rf, isr = str(self.replication_factor), str(self.min_insync_replicas)
        return {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{node.address},CONTROLLER://{node.host}:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{node.address}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(data_dir),
            "default.replication.factor": rf,
            "min.insync.replicas": isr,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": str(INTERNAL_TOPIC_PARTITIONS),
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": isr,
            "transaction.state.log.num.partitions": str(INTERNAL_TOPIC_PARTITIONS),
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "log.retention.ms": "-1",
            "log.segment.bytes": str(SEGMENT_BYTES),
        }

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Layout:
        return cls(data["version"], data["cluster_id"], tuple(Node(**n) for n in data["nodes"]))


# A run whose program lasts up to this long starts its local brokers with C1 alone: over a short run a broker's C2
# compilations are about 40 % of its CPU (docs/benchmarks.md: "The broker's JIT over a short run"); a long soak keeps
# the JVM's default.
SHORT_RUN_S = 300


class LocalKafkaBackend:
    """Brokers of the run's own on this machine, any number, on any release: the one backend with broker faults."""

    name = "local"
    shared, starts_brokers, broker_faults, network_faults, data_survives_release = False, True, True, True, True

    def __init__(self, run_dir: Path, brokers: int = 1, version: str = KAFKA_VERSION,
                 quotas: list[soak_quotas.Quota] | None = None, features: dict[str, int] | None = None,
                 short_lived: bool = False, config: dict[str, str] | None = None, hosts: int = 0,
                 stalls: list[Stall] | None = None) -> None:
        self.run_dir, self.brokers, self.version, self.quotas = run_dir, brokers, version, quotas or []
        self.stalls = stalls or []  # the program's stalls of a broker's thread: those brokers start with the agent
        # A network namespace for each node and for each of ``hosts`` instances, when the program cuts links (0: none).
        self.hosts = hosts
        self.config = config or {}  # param broker_config, after the layout's own settings
        self.features = features or {}  # feature levels set at format time (param transaction_version), else the release's
        self.short_lived = short_lived  # the brokers of a short run: C1 alone (kafka_jars.java_command)
        self.home = run_dir / "kafka"
        self.processes = LocalProcesses(run_dir)

    @classmethod
    def from_plan(cls, plan: Plan, run_dir: Path) -> LocalKafkaBackend:
        features = {} if plan["transaction_version"] is None else {"transaction.version": plan["transaction_version"]}
        return cls(run_dir, plan["brokers"], plan["kafka_version"], soak_quotas.from_params(plan["quotas"]), features,
                   short_lived=plan["program_s"] <= SHORT_RUN_S,
                   config=broker_settings.as_properties(plan.get("broker_config", {})),
                   hosts=plan["instances"] if "network_faults" in plan.get("program_needs", []) else 0,
                   stalls=[Stall(**s) for s in plan.get("stalls", []) if s.get("broker")])

    @classmethod
    def preflight(cls, plan: Plan) -> None:
        """Apache Kafka's jars of each release the run starts, fetched now (cached after), so a release nobody serves
        is refused before anything starts; a program that cuts links needs namespaces and nftables."""
        param, versions = kafka_jars.broker_versions(plan)
        for version in versions:
            kafka_jars.resolve(version, param=param)
        if "network_faults" in plan.get("program_needs", []) and (why := network_problem()):
            raise NetworkError(f"program: its network cuts (nN-, nbN-) need a network namespace per host: {why}")

    # -- the cluster's shape and files ---------------------------------------------------------------
    @property
    def layout_file(self) -> Path:
        return self.home / "layout.json"

    def network(self) -> RunNetwork | None:
        """The run's network, made (or completed, on a retry) when its program cuts links."""
        return RunNetwork.make(self.run_dir, self.brokers, self.hosts) if self.hosts else None

    def layout(self, network: RunNetwork | None = None) -> Layout:
        """The run's layout, made on first use (ports chosen now, and each node's address in ``network``, kept for
        restarts)."""
        if self.layout_file.exists():
            return Layout.from_dict(json.loads(self.layout_file.read_text()))
        ports = iter(free_ports(3 * self.brokers))
        layout = Layout(self.version, new_cluster_id(),
                        tuple(Node(n, next(ports), next(ports), next(ports),
                                   *([network.addresses[broker_host(n)]] if network else []))
                              for n in range(1, self.brokers + 1)))
        self.home.mkdir(parents=True, exist_ok=True)
        self.layout_file.write_text(json.dumps(layout.as_dict(), indent=2))
        return layout

    def config_file(self, node: Node) -> Path:
        return self.home / f"node-{node.node_id}" / "server.properties"

    def log_file(self, node: Node) -> Path:
        return self.run_dir / rundir.LOGS / f"{node.name}.log"

    def properties(self, layout: Layout, node: Node, data_dir: Path) -> dict[str, str]:
        """The node's ``server.properties``: its layout's, then param broker_config's (a subclass adds listeners,
        e.g. a secured one)."""
        return {**layout.server_properties(node, data_dir), **self.config}

    def format_options(self) -> list[str]:
        """Extra ``StorageTool format`` options (e.g. ``--add-scram`` credentials of a secured listener)."""
        return []

    def prepare(self, layout: Layout, node: Node) -> subprocess.Popen | None:
        """Write the node's server.properties; start formatting its storage unless it already is."""
        config = self.config_file(node)
        data = config.parent / "data"
        if (data / "meta.properties").exists():
            return None
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties(layout, node, data).items()))
        command = kafka_jars.java_command(layout.version, "kafka.tools.StorageTool", "format", "-t",
                                          layout.cluster_id, "-c", str(config), "--ignore-formatted",
                                          *(f"--feature={name}={level}" for name, level in self.features.items()),
                                          *self.format_options(), short_lived=True)
        out = self.log_file(node)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("ab") as fh:
            return subprocess.Popen(command, stdout=fh, stderr=subprocess.STDOUT)

    def release_file(self, node: Node) -> Path:
        return self.config_file(node).parent / "release"

    def node_release(self, layout: Layout, node: Node) -> str:
        """The Apache Kafka release node N runs: the one a rolling upgrade moved it to (``bN^V``), else the cluster's
        (kept beside its data, as a host keeps the software it was upgraded to through restarts)."""
        path = self.release_file(node)
        return path.read_text().strip() if path.exists() else layout.version

    def start_node(self, layout: Layout, node: Node) -> None:
        release = self.node_release(layout, node)
        planned = [s for s in self.stalls if s.broker == node.node_id]
        agent = [stall_agent.java_options(byteman.agent_jar(), broker_dir(self.run_dir, node.node_id), planned,
                                          release_of(release))] if planned else []
        gc_log = resources.gc_option(self.run_dir)
        command = kafka_jars.java_command(release, "kafka.Kafka", str(self.config_file(node)),
                                          heap=BROKER_HEAP, properties=quota_meter.jmx_properties(node.jmx_port),
                                          short_lived=self.short_lived, options=(*agent, *([gc_log] if gc_log else [])))
        self.processes.start(node.name, self.on_host(node.node_id, command), self.log_file(node))

    def on_host(self, node_id: int, command: list[str]) -> list[str]:
        """``command`` on node ``node_id``'s host: in its network namespace, if the run gave it one."""
        network = RunNetwork.load(self.run_dir)
        return network.enter(broker_host(node_id), command) if network else command

    # -- setup / teardown ----------------------------------------------------------------------------
    def provision(self, topics: dict[str, int], prefix: str, start_timeout: float = 120.0,
                  fixed: dict[str, str] | None = None) -> Cluster:
        """Start the nodes (or reattach to them on a retry), wait until every one serves, create ``{role:
        partitions}`` topics (named by ``topic_names``), set and verify the quotas. On failure the nodes are stopped
        before the error is raised: a teardown does not run after a failed setup. A port that another process took
        between choosing it and the broker binding it costs a fresh start on other ports (the clashed attempt's
        storage is kept beside, as ``kafka.port-taken-N``)."""
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                return self._provision(topics, prefix, start_timeout, fixed)
            except PortTakenError as exc:
                if attempt == PORT_ATTEMPTS:
                    raise
                log.warning("%s; starting again on other ports", str(exc).splitlines()[0])
                self.home.rename(self.home.with_name(f"{self.home.name}.port-taken-{attempt}"))
        raise AssertionError("unreachable")

    def _provision(self, topics: dict[str, int], prefix: str, start_timeout: float,
                   fixed: dict[str, str] | None) -> Cluster:
        started = time.monotonic()
        try:
            layout = self.layout(self.network())
            formatting = [(node, self.prepare(layout, node)) for node in layout.nodes]
            for node, proc in formatting:
                if proc is not None and proc.wait(120) != 0:
                    raise BrokerStartError(f"formatting the storage of broker {node.node_id} failed; see "
                                           f"{self.log_file(node)}")
            for node in layout.nodes:
                if not self.processes.is_alive(node.name):
                    self.start_node(layout, node)
            self.wait_until_serving(layout, start_timeout)
            log.info("Apache Kafka %s: %d node(s) serving at %s after %.1f s (cluster id %s)", layout.version,
                     len(layout.nodes), layout.bootstrap_servers, time.monotonic() - started, layout.cluster_id)
            features = self.verify_features(layout)
            names = topic_names(topics, prefix, fixed, owned=True)
            kafka_io.create_topics(layout.bootstrap_servers, {names[role]: n for role, n in topics.items()},
                                   replication_factor=layout.replication_factor,
                                   config={"min.insync.replicas": str(layout.min_insync_replicas)})
            log.info("created topics %s (replication factor %d, min.insync.replicas %d)", sorted(names.values()),
                     layout.replication_factor, layout.min_insync_replicas)
            applied = soak_quotas.apply(self.quotas, self.config_command, layout.bootstrap_servers)
            quota_meter.start(self.processes, {n.node_id: n.jmx_port for n in layout.nodes}, self.quotas,
                              self.meter_dir, self.on_host)
        except Exception:
            self.release(None)
            raise
        return Cluster(self.name, layout.bootstrap_servers, names, quotas=applied, brokers=len(layout.nodes),
                       kafka_version=layout.version, features=features)

    def verify_features(self, layout: Layout) -> dict[str, int | str]:
        """The cluster's finalized feature levels, metadata.version among them, where the run set some at format time,
        as the cluster reports them (Kafka's ``kafka-features describe``: confluent-kafka has no DescribeFeatures); a
        level the cluster did not take is a start error naming the param."""
        if not self.features:
            return {}
        found = cluster_features(layout.version, layout.bootstrap_servers)
        wrong = {name: level for name, level in self.features.items() if found.get(name, 0) != level}
        if wrong:
            raise BrokerStartError(f"param transaction_version: the cluster finalized {found} after its storage was "
                                   f"formatted with {self.features}")
        log.info("features finalized as the run set them: %s", {n: found.get(n, 0) for n in self.features})
        return found

    def wait_until_serving(self, layout: Layout, timeout: float, nodes: list[Node] | None = None) -> None:
        """Until every node (of ``nodes``, when given) answers metadata requests itself and lists itself: registered
        with the controller and unfenced. Asked of the nodes alone: for a few seconds after a kill, the others still
        list the node that died (until its session with the controller expires)."""
        deadline = time.monotonic() + timeout
        nodes = layout.nodes if nodes is None else nodes
        expected = {node.node_id for node in nodes}
        bootstrap = ",".join(node.address for node in nodes)
        while True:
            dead = [node for node in nodes if not self.processes.is_alive(node.name)]
            if dead:
                log_file = self.log_file(dead[0])
                clash = log_file.exists() and "Address already in use" in log_file.read_text(errors="replace")
                raise (PortTakenError if clash else BrokerStartError)(
                    f"broker {dead[0].node_id} exited while starting; its log: {log_file}\n{tail(log_file)}")
            serving = kafka_io.live_brokers(bootstrap)
            if serving >= expected:
                return
            if time.monotonic() > deadline:
                raise BrokerStartError(f"Kafka did not serve within {timeout:.0f} s (brokers up: "
                                       f"{sorted(serving) or 'none'} of {sorted(expected)}); see "
                                       f"{self.run_dir / 'logs'}")
            time.sleep(0.5)

    def release(self, cluster: Cluster | None = None) -> None:
        """Stop every node (SIGTERM, SIGKILL after 30 s); its data and log stay in the run directory. The quotas
        lived in this cluster only and end with it, and so does the run's network, if it had one."""
        quota_meter.stop(self.processes)
        running = [name for name in self.processes.names() if name.startswith("kafka-")
                   and self.processes.is_alive(name)]
        with ThreadPoolExecutor(max(1, len(running))) as pool:
            list(pool.map(carry(lambda name: self.processes.stop(name, timeout=30)), running))
        log.info("Kafka stopped: %s", ", ".join(running) or "no node was running")
        release_network(self.run_dir)

    # -- what the quotas did ---------------------------------------------------------------------------
    @property
    def meter_dir(self) -> Path:
        return self.run_dir / "quotas"

    def quota_usage(self) -> list[dict]:
        """Stop measuring the quotas (the app has stopped) and say what each did (``quota_meter.usage_per_setting``),
        also into ``quotas.json``."""
        if not self.quotas:
            return []
        quota_meter.stop(self.processes)
        usage = quota_meter.usage_per_setting(self.quotas, self.meter_dir, [n.node_id for n in self.layout().nodes])
        rundir.write_json(self.run_dir / rundir.QUOTAS, usage)
        return usage

    # -- faults ----------------------------------------------------------------------------------------
    def set_broker(self, broker: int, up: bool, timeout: float = 300.0) -> str:
        """``bN-``: SIGKILL node N (no controlled shutdown); ``bN+``: start it again on its data, and return once it is
        registered and serving again, so that what the program does next meets a cluster of which it is a member (a
        client that asks for metadata while it is still fenced is told the broker is gone). Within ``timeout``: on a
        machine with a load average of 15 to 25 a restart took 87 to 110 s with little to recover."""
        layout = self.layout()
        node = self.node(layout, broker)
        if up:
            if not self.processes.is_alive(node.name):
                self.start_node(layout, node)
            self.wait_until_serving(layout, timeout, [node])
            return "up"
        self.processes.kill(node.name)
        return "down"

    def upgrade_broker(self, broker: int, release: str, timeout: float = 180.0) -> dict[str, Any]:
        """``bN^V``, one step of a rolling upgrade: stop node N gracefully (SIGTERM: a controlled shutdown that moves its
        leaders away), start it on ``release`` on its own data, and return once it serves and is back in the in-sync
        replicas of every partition it holds, as a rolling upgrade waits before the next broker; what it ran before,
        and how long each part took."""
        layout = self.layout()
        node = self.node(layout, broker)
        before, started = self.node_release(layout, node), time.monotonic()
        self.processes.stop(node.name, timeout=60)
        stopped = time.monotonic()
        self.release_file(node).write_text(release + "\n")
        self.start_node(layout, node)
        self.wait_until_serving(layout, timeout, [node])
        serving = time.monotonic()
        kafka_io.wait_until_in_sync(layout.bootstrap_servers, broker, timeout)
        return {"from": before, "release": release, "stop_s": round(stopped - started, 1),
                "serving_s": round(serving - stopped, 1), "in_sync_s": round(time.monotonic() - serving, 1)}

    def node(self, layout: Layout, broker: int) -> Node:
        node = next((n for n in layout.nodes if n.node_id == broker), None)
        if node is None:
            raise ValueError(f"broker {broker} does not exist: this cluster has brokers 1..{len(layout.nodes)}")
        return node

    # -- tools -----------------------------------------------------------------------------------------
    def config_command(self, args: list[str]) -> str:
        """Kafka's ``ConfigCommand`` (what ``kafka-configs.sh`` runs) from this cluster's jars."""
        return kafka_jars.run_tool(self.version, kafka_jars.CONFIG_COMMAND, args)


class BrokerStartError(RuntimeError):
    """A node that could not be formatted or did not come up; the message quotes the end of its log."""


class PortTakenError(BrokerStartError):
    """A node could not bind a port chosen free a moment before: another process took it meanwhile."""


def tail(path: Path, lines: int = 15) -> str:
    """The last lines of a log, for an error message that says why without opening it."""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


FEATURE_LINE = re.compile(r"Feature:\s*(\S+).*?FinalizedVersionLevel:\s*(\S+)")


def cluster_features(version: str, bootstrap: str, settings: dict[str, Any] | None = None) -> dict[str, int | str]:
    """A cluster's finalized feature levels, as Kafka's ``kafka-features describe`` reports them (confluent-kafka has no
    DescribeFeatures); a secured cluster's ``settings`` reach the tool on its standard input."""
    output = kafka_jars.run_tool(version, kafka_jars.features_command(version), [
        "--bootstrap-server", bootstrap, *(["--command-config", kafka_jars.STDIN_CONFIG] if settings else []),
        "describe"], stdin=java_client.tool_config(settings) if settings else None)
    return finalized_features(output)


def finalized_features(output: str) -> dict[str, int | str]:
    """``{feature: finalized level}`` from ``kafka-features describe`` (``Feature: transaction.version
    SupportedMinVersion: 0  SupportedMaxVersion: 2  FinalizedVersionLevel: 1  Epoch: 15``): a number, or
    ``metadata.version``'s name (``4.3-IV0``)."""
    return {name: int(level) if level.isdigit() else level for name, level in FEATURE_LINE.findall(output)}
