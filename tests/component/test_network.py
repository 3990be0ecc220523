"""A run's network made for real (namespaces, veths, a bridge, nftables; root): a TCP connection between an instance's
host and a broker's hangs while their link is cut and carries on once it is healed, while the harness still reaches
the broker; a process started in a host's namespace is the supervisor's to signal; release and the reaper (a crashed
run: a process still in its namespace) leave no namespace, link, route or table behind."""

from __future__ import annotations

import ipaddress
import json
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from support.waits import until

from kafka_soak import reaper
from kafka_soak.backends.local_kafka import LocalKafkaBackend
from kafka_soak.infra import network
from kafka_soak.infra.network import RunNetwork
from kafka_soak.infra.runtime.local import LocalProcesses

PORT = 9999  # the namespace is the run's own: no other process binds there
ECHO = f"""
import socket, threading
def echo(conn):
    while data := conn.recv(100):
        conn.sendall(data)
server = socket.create_server((__import__("sys").argv[1], {PORT}))
while True:
    threading.Thread(target=echo, args=(server.accept()[0],), daemon=True).start()
"""
# A client in the instance's namespace: connects, then for each line of its input ("send T" or "connect T") sends on its
# connection and waits T seconds for the echo, or opens a new connection within T seconds; prints what happened.
CLIENT = """
import socket, sys
address = (sys.argv[1], int(sys.argv[2]))
conn = socket.create_connection(address, timeout=10)
print("connected", flush=True)
for line in sys.stdin:
    what, timeout = line.split()
    try:
        if what == "send":
            conn.settimeout(float(timeout))
            conn.sendall(b"ping")
            print("echo", conn.recv(100).decode(), flush=True)
        else:
            socket.create_connection(address, timeout=float(timeout)).close()
            print("connected", flush=True)
    except OSError as exc:
        print(type(exc).__name__, flush=True)
"""


def wait_until_serving(address: str) -> None:
    """Until the echo server in the broker's namespace accepts connections from the harness."""
    def serving() -> bool:
        try:
            socket.create_connection((address, PORT), timeout=1).close()
            return True
        except OSError:
            return False

    until(serving, f"echo server serving at {address}:{PORT}", every_s=0.1)


def harness_reaches(address: str) -> bool:
    with socket.create_connection((address, PORT), timeout=5) as conn:
        conn.sendall(b"hi")
        return conn.recv(10) == b"hi"


def nothing_left(net: RunNetwork) -> None:
    assert not [ns for ns in net.namespaces.values()
                if ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout]
    links = json.loads(subprocess.run(["ip", "-j", "link"], capture_output=True, text=True).stdout)
    assert net.link not in {link["ifname"] for link in links}
    assert net.table not in subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
    assert not [r for r in json.loads(subprocess.run(["ip", "-j", "route", "show", "table", "all"], capture_output=True,
                                                     text=True).stdout) if r.get("dst") == net.subnet]
    assert net.leftovers() == []


@pytest.fixture
def run_dir(tmp_path):
    yield tmp_path
    network.release(tmp_path)  # whatever a failed test left


def test_a_cut_link_hangs_a_connection_and_a_heal_lets_it_carry_on(run_dir):
    net = RunNetwork.make(run_dir, brokers=2, instances=1)
    processes = LocalProcesses(run_dir)
    record = processes.start("echo", net.enter("b1", [sys.executable, "-c", ECHO, net.addresses["b1"]]),
                             run_dir / "echo.log")
    assert processes.process("echo").cmdline()[:2] == [sys.executable, "-c"], "ip netns exec execs: the PID is its"
    wait_until_serving(net.addresses["b1"])
    client = subprocess.Popen(net.enter("i1", [sys.executable, "-c", CLIENT, net.addresses["b1"], str(PORT)]),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        def ask(line: str) -> str:
            client.stdin.write(line + "\n")
            client.stdin.flush()
            return client.stdout.readline().strip()

        assert client.stdout.readline().strip() == "connected"
        assert ask("send 10") == "echo ping"

        assert net.cut("i1", net.brokers) == [net.addresses["b1"], net.addresses["b2"]]
        assert net.cut_hosts() == ["i1"]
        assert ask("send 2") == "TimeoutError", "the established connection hangs: no reset, no error"
        assert ask("connect 2") == "TimeoutError", "a new connection is dropped, not refused"
        assert harness_reaches(net.addresses["b1"]), "only the instance's link is cut"

        assert net.heal("i1") and net.cut_hosts() == [] and not net.heal("i1")
        assert ask("send 30") == "echo pingping", "the bytes sent while cut arrive once healed, on the same connection"
        assert ask("connect 10") == "connected"

        net.cut("b1", ["b2"])  # nbN-: a broker cut from the others, clients still reach it
        assert ask("send 10") == "echo ping" and harness_reaches(net.addresses["b1"])
        assert net.cut_hosts() == ["b1"]
    finally:
        client.kill()
        client.wait(10)
    processes.pause("echo")
    assert processes.is_paused("echo") and processes.resume("echo")
    processes.kill("echo")
    assert processes.process("echo") is None and not psutil.pid_exists(record.pid)
    net.release()
    nothing_left(net)


def test_release_and_the_reaper_of_a_crashed_run_leave_nothing_of_its_network(tmp_path):
    released, crashed = tmp_path / "released", tmp_path / "crashed"
    for d in (released, crashed):
        d.mkdir()
    try:
        backend = LocalKafkaBackend(released, brokers=3, hosts=2)
        first = backend.network()
        first.cut("i2", first.brokers)
        backend.release()
        nothing_left(first)

        second = RunNetwork.make(crashed, brokers=1, instances=1)
        second.cut("b1", ["i1"])
        processes = LocalProcesses(crashed)
        processes.start("echo", second.enter("b1", [sys.executable, "-c", ECHO, second.addresses["b1"]]),
                        crashed / "echo.log")
        assert set(reaper.leftovers(crashed)) == {"echo", *second.leftovers()}
        assert list(reaper.reap(crashed, "test")) == ["echo"]
        nothing_left(second)
        assert reaper.leftovers(crashed) == []
        [reaped] = [json.loads(line) for line in (crashed / "events.jsonl").read_text().splitlines()]
        assert reaped["network"] and all(item.split()[0] in ("namespace", "link", "route") for item in reaped["network"])
    finally:
        network.release(released)
        network.release(crashed)


def test_a_run_whose_24_another_run_holds_takes_the_next_free_one(tmp_path: Path):
    first_dir = tmp_path / "a"
    seed = int(network.tag_of(first_dir), 16) % 512
    second_dir = next(d for i in range(100_000) if int(network.tag_of(d := tmp_path / f"b{i}"), 16) % 512 == seed)
    try:
        for d in (first_dir, second_dir):
            d.mkdir()
        first = RunNetwork.make(first_dir, brokers=1, instances=1)
        second = RunNetwork.make(second_dir, brokers=1, instances=1)
        assert network.free_subnet(seed, []) == ipaddress.ip_network(first.subnet), "both start from the same /24"
        assert second.subnet != first.subnet and second.namespaces["hub"] != first.namespaces["hub"]
    finally:
        for d in (first_dir, second_dir):
            network.release(d)
