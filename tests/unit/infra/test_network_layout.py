"""A run's network on paper: the names of what it makes (derived from the run directory, within what Linux takes),
the hosts' addresses, the /24 it picks beside the machine's routes, and the nftables script of a cut. The network
itself, made, cut and removed, is tests/component/test_network.py's."""

from __future__ import annotations

import ipaddress
import json

import pytest

from kafka_soak.infra import network
from kafka_soak.infra.network import RunNetwork

IFNAMSIZ = 15  # the longest name a Linux network device can have


def test_every_name_is_derived_from_the_run_directory_and_recorded_as_made(tmp_path):
    run_dir = tmp_path / "runs" / "dag" / "run"
    run_dir.mkdir(parents=True)
    net = RunNetwork.planned(run_dir, ipaddress.ip_network("198.18.7.0/24"), brokers=3, instances=2)
    tag = network.tag_of(run_dir)
    assert net.namespaces == {"hub": f"soak-{tag}-hub", "b1": f"soak-{tag}-b1", "b2": f"soak-{tag}-b2",
                              "b3": f"soak-{tag}-b3", "i1": f"soak-{tag}-i1", "i2": f"soak-{tag}-i2"}
    assert net.addresses == {"harness": "198.18.7.1", "b1": "198.18.7.11", "b2": "198.18.7.12", "b3": "198.18.7.13",
                             "i1": "198.18.7.101", "i2": "198.18.7.102"}
    assert (net.link, net.table) == (f"soak{tag}", f"soak_{tag}") and len(net.link) <= IFNAMSIZ
    assert net.hosts == ["b1", "b2", "b3", "i1", "i2"] and net.brokers == ["b1", "b2", "b3"]
    assert net.enter("i2", ["java", "-version"]) == ["ip", "netns", "exec", f"soak-{tag}-i2", "java", "-version"]
    assert [network.target_of(h) for h in ("b3", "i2")] == [{"broker": 3}, {"instance": 2}]
    other = RunNetwork.planned(tmp_path / "runs" / "dag" / "run.attempt-2", ipaddress.ip_network("198.18.7.0/24"), 3, 2)
    assert not set(other.namespaces.values()) & set(net.namespaces.values()) and other.link != net.link
    (run_dir / network.RECORD).write_text(json.dumps(net.__dict__))
    assert RunNetwork.load(run_dir) == net and RunNetwork.load(tmp_path) is None
    assert network.leftovers(tmp_path) == [] and network.release(tmp_path) == [], "a run that cut no link has none"


def test_the_largest_run_fits_its_24_with_the_harness_apart():
    subnet = ipaddress.ip_network("198.19.255.0/24")
    addresses = [network.host_address(subnet, h) for h in ("b3", "i1", "i32")]
    assert addresses == ["198.19.255.13", "198.19.255.101", "198.19.255.132"]
    assert all(ipaddress.ip_address(a) in subnet and ipaddress.ip_address(a) in network.RANGE for a in addresses)


def test_the_24_taken_is_the_first_from_the_seed_that_no_route_of_the_machine_overlaps():
    taken = [ipaddress.ip_network(n) for n in ("198.18.5.0/24", "198.18.6.128/25", "198.18.7.9/32", "10.0.0.0/8")]
    assert network.free_subnet(5, taken) == ipaddress.ip_network("198.18.8.0/24")
    assert network.free_subnet(5 + 512, []) == ipaddress.ip_network("198.18.5.0/24"), "the seed wraps around the range"
    assert network.free_subnet(511, [ipaddress.ip_network("198.19.255.0/24")]) == ipaddress.ip_network("198.18.0.0/24")
    with pytest.raises(network.NetworkError, match=r"every /24 of 198.18.0.0/15 overlaps a route"):
        network.free_subnet(0, [ipaddress.ip_network("198.16.0.0/12")])


def test_a_cut_drops_both_directions_to_the_peers_alone_and_heals_by_deleting_its_table():
    script = network.cut_rules("soak_ab12cd34", ["198.18.7.12", "198.18.7.13"])
    assert script.startswith("table inet soak_ab12cd34 {}\ndelete table inet soak_ab12cd34\n"), \
        "declared first, so the delete works whether or not it was cut"
    assert "hook input priority -10; policy accept; ip saddr { 198.18.7.12, 198.18.7.13 } drop;" in script
    assert "hook output priority -10; policy accept; ip daddr { 198.18.7.12, 198.18.7.13 } drop;" in script
    assert "reject" not in script, "a cut link drops: connections hang, they are not refused"
    assert network.heal_rules("soak_ab12cd34") == "table inet soak_ab12cd34 {}\ndelete table inet soak_ab12cd34\n"
