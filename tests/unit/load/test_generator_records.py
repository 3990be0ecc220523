"""The generator's records without a broker: the contract's values of a chunk, one record as a chunk gives it, the
resume point of each partition, and the command line's refusals (against a real broker: component/test_generator.py)."""

import json
import subprocess
import sys

import pytest
from support.outside_apps import ORDERS_KEY
from support.outside_apps import ORDERS_VALUE as ORDERS

from kafka_soak.load import generator


def test_the_cli_refuses_a_bad_profile_input_naming_it():
    cmd = [sys.executable, "-m", "kafka_soak.load.generator", "--bootstrap", "127.0.0.1:1", "--topic", "t", "--records",
           "1", "--keys", "1", "--key-template", "c-{ts}", "--value", '{"encoding": "int16"}']
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 2
    assert "--key-template: {ts} cannot be in a key" in done.stderr
    assert "--value.encoding: 'int16' is no encoding; allowed: json, string, int32, int64, bytes, soak" in done.stderr


def test_resume_point_skips_exactly_what_each_partition_holds():
    keys, partitions = 10, 3
    records = generator.Records(keys, partitions, "")
    last = {p: None for p in range(partitions)}
    assert generator.resume_point(last, records.partitions_of, 20) == list(range(1, 21))
    # partition of id 5 holds up to id 5; others hold nothing
    p5 = generator.partition_of(generator.key_of(5, keys), partitions)
    last[p5] = 5
    todo = generator.resume_point(last, records.partitions_of, 20)
    assert 5 not in todo and all(i in todo for i in range(6, 21))
    assert [i for i in range(1, 5) if i not in todo] == \
        [i for i in range(1, 5) if generator.partition_of(generator.key_of(i, keys), partitions) == p5]


def test_chunk_values_are_the_contract_json_of_each_id():
    """Values are formatted without json.dumps for speed: they must still be exactly its output."""
    keys, partitions, payload = 7, 4, "AbcXyz09"
    records = generator.Records(keys, partitions, payload)
    ids = [1, 7, 8, 123456]
    for record_id, (key, partition, value, headers) in zip(ids, records.chunk(ids, 1700000000123), strict=True):
        assert key == generator.key_of(record_id, keys)
        assert partition == generator.partition_of(key, partitions) and headers is None
        assert value == json.dumps({"id": record_id, "key": key, "seq": generator.seq_of(record_id, keys),
                                    "payload": payload, "ts": 1700000000123})


@pytest.mark.parametrize("value", [None, ORDERS], ids=["soak", "profile"])
def test_one_record_is_the_one_a_chunk_gives_and_works_out_no_key_table(value):
    """Admission sizes the largest record of a run of 10M keys: one record, as the generator writes it, without the
    key tables (10M names once took 1.7 GB and seconds at every DAG parse)."""
    spec = generator.LoadSpec("", "", 20_000_000, 10_000_000, payload_bytes=16, key_template=ORDERS_KEY, value=value)
    records = generator.records_for(spec, 12)
    assert records.one(19_999_999, 7) == records_for_one_chunk(spec, 19_999_999)
    assert "names" not in vars(records) and "partitions" not in vars(records), "no key table was built"


def records_for_one_chunk(spec: generator.LoadSpec, record_id: int) -> tuple:
    """The same record through a chunk of records that know only as many keys as it needs."""
    small = generator.records_for(spec, 12)
    small.keys = spec.keys
    small.__dict__["names"] = {(record_id - 1) % spec.keys: generator.key_of(record_id, spec.keys)
                               if spec.value is None else small.key(0, (record_id - 1) % spec.keys, 0)}
    small.__dict__["partitions"] = {k: generator.partition_of(n, 12) for k, n in small.__dict__["names"].items()}
    small.__dict__["middles"] = {k: generator.middle(n) for k, n in small.__dict__["names"].items()}
    return small.chunk([record_id], 7)[0]
