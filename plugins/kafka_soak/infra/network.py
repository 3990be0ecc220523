"""The network of a run whose program cuts links (``nN-``, ``nbN-``): each host of the run on a network of its own.

Each broker (host ``b<N>``) and each app instance (host ``i<N>``, shared by instance N of every app of a matrix) lives
in a network namespace of its own, ``soak-<tag>-<host>``, linked by a veth pair to a bridge in a hub namespace
(``soak-<tag>-hub``). The harness (generator, drain, checker, Kafka's tools) stays in the root namespace and reaches
the hosts through a veth of its own (``soak<tag>``, address ``.1``). ``<tag>`` is a digest of the run directory's
path, so parallel runs, and the members of a broker version matrix, never share a name.

Addresses come from one ``/24`` of 198.18.0.0/15 (RFC 2544's benchmarking range) that no route or address of this
machine overlaps when the run takes it. The hosts have no route but their ``/24``, and the root namespace gets an
``unreachable`` route for it beneath the link's own: should the link be gone while a harness process still reaches
for a broker, nothing of the run's goes to the machine's default route. A cut is an nftables table
(``soak_<tag>``) in the host's namespace that drops every packet to and from its peers: connections hang, as across a
lost link, they are not refused. Healing deletes the table.

Everything is recorded in ``network.json`` of the run directory before it is made, so release and the reaper find it
all from the evidence: deleting the root link, the namespaces (their links and tables go with them) and the route
leaves nothing.
"""

from __future__ import annotations

import fcntl
import hashlib
import ipaddress
import json
import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)

RECORD = "network.json"
RANGE = ipaddress.ip_network("198.18.0.0/15")  # RFC 2544: benchmarking, never routed on the internet
GUARD_METRIC = 4242  # the unreachable route beneath the link's own (metric 0), kept until the link is gone
HUB_BRIDGE = "br0"
HARNESS_PORT = "harness"  # the harness link's end in the hub ("h" alone: ip takes it for "help")
HOST_DEVICE = "eth0"
NETNS_DIR = Path("/run/netns")
LOCK = Path(tempfile.gettempdir()) / "kafka-soak-network.lock"  # two runs never pick the same /24 at once
TIMEOUT_S = 30.0


class NetworkError(RuntimeError):
    """The run's network cannot be made or changed; the message says what and why."""


def broker_host(n: int) -> str:
    return f"b{n}"


def instance_host(n: int) -> str:
    return f"i{n}"


def target_of(host: str) -> dict[str, int]:
    """What a host is, as a step or an event names its target: ``{"broker": N}`` or ``{"instance": N}``."""
    return {"broker" if host.startswith("b") else "instance": int(host[1:])}


def host_address(subnet: ipaddress.IPv4Network, host: str) -> str:
    """``.1`` is the harness's; broker N is ``.10+N`` and instance N ``.100+N`` (params bound both far below)."""
    base = {"b": 10, "i": 100}[host[0]]
    return str(subnet.network_address + base + int(host[1:]))


def tag_of(run_dir: Path) -> str:
    return hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:8]


def free_subnet(seed: int, taken: list[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    """The first ``/24`` of ``RANGE`` from ``seed`` on that overlaps none of ``taken``."""
    candidates = list(RANGE.subnets(new_prefix=24))
    for i in range(len(candidates)):
        subnet = candidates[(seed + i) % len(candidates)]
        if not any(subnet.overlaps(t) for t in taken):
            return subnet
    raise NetworkError(f"network: every /24 of {RANGE} overlaps a route or address of this machine; the run's hosts "
                       "need one of their own")


def cut_rules(table: str, peers: list[str]) -> str:
    """The nftables script that makes ``table`` (in a host's namespace) drop every packet to and from ``peers``, in
    place of what it held (declaring the table first lets the delete run whether or not it was there)."""
    addresses = ", ".join(peers)
    return (f"{heal_rules(table)}table inet {table} {{\n"
            f"  chain in {{ type filter hook input priority -10; policy accept; ip saddr {{ {addresses} }} drop; }}\n"
            f"  chain out {{ type filter hook output priority -10; policy accept; ip daddr {{ {addresses} }} drop; }}\n"
            "}\n")


def heal_rules(table: str) -> str:
    return f"table inet {table} {{}}\ndelete table inet {table}\n"


def run(*command: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S)
    if check and done.returncode != 0:
        raise NetworkError(f"network: `{' '.join(command)}` failed: {done.stderr.strip() or done.stdout.strip()}")
    return done


def problem() -> str:
    """Why this machine cannot give a run's hosts networks of their own ("" when it can)."""
    if os.geteuid() != 0:
        return "network namespaces and nftables need root, and this process runs as another user"
    missing = [tool for tool, package in (("ip", "iproute2"), ("nft", "nftables")) if shutil.which(tool) is None]
    return f"{', '.join(missing)} not installed (make setup installs iproute2 and nftables)" if missing else ""


def routes_in_use() -> list[ipaddress.IPv4Network]:
    """Every IPv4 route of the root namespace's tables but the default ones, local addresses included."""
    routes = json.loads(run("ip", "-j", "-4", "route", "show", "table", "all").stdout or "[]")
    return [ipaddress.ip_network(r["dst"], strict=False) for r in routes
            if r.get("dst") not in (None, "default", "0.0.0.0/0")]


@dataclass(frozen=True)
class RunNetwork:
    """A run's hosts, their namespaces and addresses, and the names of everything made for them (``network.json``)."""

    subnet: str
    namespaces: dict[str, str]  # host -> its namespace; "hub" -> the bridge's
    addresses: dict[str, str]  # host -> its address; "harness" -> the root link's
    link: str  # the root namespace's end of the harness's veth
    table: str  # the nftables table of a cut, in the cut host's namespace

    @classmethod
    def planned(cls, run_dir: Path, subnet: ipaddress.IPv4Network, brokers: int, instances: int) -> RunNetwork:
        tag = tag_of(run_dir)
        hosts = [broker_host(n) for n in range(1, brokers + 1)] + [instance_host(n) for n in range(1, instances + 1)]
        return cls(str(subnet), {"hub": f"soak-{tag}-hub", **{h: f"soak-{tag}-{h}" for h in hosts}},
                   {"harness": str(subnet.network_address + 1), **{h: host_address(subnet, h) for h in hosts}},
                   f"soak{tag}", f"soak_{tag}")

    @classmethod
    def load(cls, run_dir: Path) -> RunNetwork | None:
        """The run's network as recorded, or None when its program cuts no link."""
        path = run_dir / RECORD
        return cls(**json.loads(path.read_text())) if path.exists() else None

    @classmethod
    def make(cls, run_dir: Path, brokers: int, instances: int) -> RunNetwork:
        """The run's network, recorded (a retried task gets the one it recorded) and made up to date (``up``). A /24 is
        chosen and its guard route added under a lock that every run of this machine takes, so no two share one."""
        network = cls.load(run_dir)
        if network is None:
            with LOCK.open("a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                subnet = free_subnet(int(tag_of(run_dir), 16), routes_in_use())
                network = cls.planned(run_dir, subnet, brokers, instances)
                (run_dir / RECORD).write_text(json.dumps(asdict(network), indent=2))  # before anything exists
                network.guard()
        network.up()
        return network

    @property
    def hosts(self) -> list[str]:
        return [h for h in self.namespaces if h != "hub"]

    @property
    def brokers(self) -> list[str]:
        return [h for h in self.hosts if "broker" in target_of(h)]

    @property
    def prefix(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen

    def guard(self) -> None:
        run("ip", "route", "replace", "unreachable", self.subnet, "metric", str(GUARD_METRIC))

    def up(self) -> None:
        """Make what is missing (each part is checked first, so a half-made network is completed, not doubled)."""
        hub = self.namespaces["hub"]
        self.guard()
        for namespace in self.namespaces.values():
            if not (NETNS_DIR / namespace).exists():
                run("ip", "netns", "add", namespace)
            run("ip", "-n", namespace, "link", "set", "dev", "lo", "up")
        if not self.has_device(hub, HUB_BRIDGE):
            run("ip", "-n", hub, "link", "add", "dev", HUB_BRIDGE, "type", "bridge")
        run("ip", "-n", hub, "link", "set", "dev", HUB_BRIDGE, "up")
        for host in self.hosts:
            namespace = self.namespaces[host]
            if not self.has_device(hub, host):
                run("ip", "-n", hub, "link", "add", "dev", host, "type", "veth", "peer", "name", HOST_DEVICE,
                    "netns", namespace)
            run("ip", "-n", hub, "link", "set", "dev", host, "master", HUB_BRIDGE, "up")
            run("ip", "-n", namespace, "addr", "replace", f"{self.addresses[host]}/{self.prefix}", "dev", HOST_DEVICE)
            run("ip", "-n", namespace, "link", "set", "dev", HOST_DEVICE, "up")
        if not self.has_device(None, self.link):
            run("ip", "link", "add", "dev", self.link, "type", "veth", "peer", "name", HARNESS_PORT, "netns", hub)
        run("ip", "-n", hub, "link", "set", "dev", HARNESS_PORT, "master", HUB_BRIDGE, "up")
        run("ip", "addr", "replace", f"{self.addresses['harness']}/{self.prefix}", "dev", self.link)
        run("ip", "link", "set", "dev", self.link, "up")
        log.info("network %s: hosts %s in namespaces of their own, the harness at %s", self.subnet,
                 ", ".join(f"{h} {self.addresses[h]}" for h in self.hosts), self.addresses["harness"])

    @staticmethod
    def has_device(namespace: str | None, device: str) -> bool:
        return run("ip", *(["-n", namespace] if namespace else []), "link", "show", "dev", device,
                   check=False).returncode == 0

    def enter(self, host: str, command: list[str]) -> list[str]:
        """``command`` run in ``host``'s namespace (``ip netns exec`` execs it: the PID a supervisor started is its)."""
        return ["ip", "netns", "exec", self.namespaces[host], *command]

    def cut(self, host: str, peers: list[str]) -> list[str]:
        """Drop every packet between ``host`` and ``peers`` (hosts) from now on; returns the peers' addresses."""
        addresses = [self.addresses[p] for p in peers]
        run("ip", "netns", "exec", self.namespaces[host], "nft", "-f", "-", stdin=cut_rules(self.table, addresses))
        return addresses

    def heal(self, host: str) -> bool:
        """Let ``host``'s packets through again; returns whether it was cut."""
        was_cut = host in self.cut_hosts()
        run("ip", "netns", "exec", self.namespaces[host], "nft", "-f", "-", stdin=heal_rules(self.table))
        return was_cut

    def cut_hosts(self) -> list[str]:
        """The hosts cut now, as their namespaces' tables say."""
        return [host for host in self.hosts if f"table inet {self.table}" in run(
            "ip", "netns", "exec", self.namespaces[host], "nft", "list", "tables", check=False).stdout]

    def leftovers(self) -> list[str]:
        """What of the network exists now."""
        left = [f"namespace {ns}" for ns in self.namespaces.values() if (NETNS_DIR / ns).exists()]
        left += [f"link {self.link}"] if self.has_device(None, self.link) else []
        routes = json.loads(run("ip", "-j", "route", "show", "exact", self.subnet, "table", "main").stdout or "[]")
        left += [f"route unreachable {self.subnet}" for r in routes if r.get("type") == "unreachable"]
        return left

    def release(self) -> list[str]:
        """Remove the network: the root link first (its peer goes with it), the namespaces (with their links and
        tables), the guard route last; returns what was removed."""
        removed = self.leftovers()
        if self.has_device(None, self.link):
            run("ip", "link", "del", "dev", self.link)
        for namespace in self.namespaces.values():
            if (NETNS_DIR / namespace).exists():
                run("ip", "netns", "del", namespace)
        run("ip", "route", "del", "unreachable", self.subnet, "metric", str(GUARD_METRIC), check=False)
        if removed:
            log.info("network %s removed: %s", self.subnet, ", ".join(removed))
        return removed


def leftovers(run_dir: Path) -> list[str]:
    """What of a run directory's network exists now (nothing for a run whose program cut no link)."""
    network = RunNetwork.load(run_dir)
    return network.leftovers() if network else []


def release(run_dir: Path) -> list[str]:
    """Remove a run directory's network, whatever of it exists; returns what was removed."""
    network = RunNetwork.load(run_dir)
    return network.release() if network else []
