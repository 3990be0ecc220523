"""A profile input's key templates and value encodings: what each renders, and the checks that refuse a bad one."""

import collections
import json
import struct
import subprocess
import sys
import zlib

import pytest

from kafka_soak.clients import encodings

ORDERS = {"encoding": "json", "template": {"orderId": "{id}", "customer": "customer-{key}",
                                           "amount": "{random_int:1:100}", "seq": "{seq}"}}
KEYS, PARTITIONS, TS = 7, 4, 1700000000123


def crc32_partition(key: str) -> int:
    return zlib.crc32(key.encode()) % PARTITIONS


def records(value: dict, key: str = "customer-{key}", payload: str = "AbcXyz09", seed: int = 0):
    return encodings.ProfileRecords(key, value, KEYS, crc32_partition, payload, seed)


def rendered(value: dict, ids: list[int], **given) -> list:
    return [value for _key, _partition, value, _headers in records(value, **given).chunk(ids, TS)]


def test_json_template_fills_numbers_as_numbers_and_the_rest_as_strings():
    template = {"orderId": "{id}", "key": "{key}", "seq": "{seq}", "ts": "{ts}", "amount": "{random_int:5:5}",
                "label": "order-{id}", "payload": "{payload}", "braces": "{{id}} {{", "quoted": 'say "hi"\\ ü\n',
                "nested": {"list": ["{seq}", 1.5, True, None, "x{key}"]}, "{id}": "keys stay literal"}
    [value] = rendered({"encoding": "json", "template": template}, [9])
    expected = {"orderId": 9, "key": 1, "seq": 2, "ts": TS, "amount": 5, "label": "order-9", "payload": "AbcXyz09",
                "braces": "{id} {", "quoted": 'say "hi"\\ ü\n', "nested": {"list": [2, 1.5, True, None, "x1"]},
                "{id}": "keys stay literal"}
    assert value == json.dumps(expected, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("template", ["{id}", "{ts}", 42, None, ["{key}", "{payload}"], "plain"])
def test_any_json_value_is_a_template(template):
    [value] = rendered({"encoding": "json", "template": template}, [3])
    filled = {"{id}": 3, "{ts}": TS, "{key}": 2, "{payload}": "AbcXyz09"}
    expected = [filled.get(t, t) for t in template] if isinstance(template, list) else filled.get(template, template)
    assert json.loads(value) == expected


def test_string_template_and_keys_fill_placeholders_and_unescape_braces():
    spec = {"encoding": "string", "template": "order {id} of {{customer}} {key}: seq {seq} at {ts} – {payload}"}
    [(key, partition, value, headers)] = records(spec, key="c-{key}-{{x}}").chunk([10], TS)
    assert value == f"order 10 of {{customer}} 2: seq 2 at {TS} – AbcXyz09"
    assert key == "c-2-{x}" and partition == crc32_partition(key)
    assert headers == [("soak.id", "10"), ("soak.seq", "2")]


def test_keys_may_vary_per_record_and_each_is_partitioned_by_its_own_crc32():
    ids = list(range(1, 50))
    orders = records(ORDERS, key="order-{id}-{random_int:0:9}")
    chunk = orders.chunk(ids, TS)
    draws = encodings.random_ints(ids, 0, 1, 0, 9)  # slot 1: the value's amount is slot 0
    assert [key for key, *_ in chunk] == [f"order-{i}-{d}" for i, d in zip(ids, draws, strict=True)]
    assert [p for _, p, *_ in chunk] == [crc32_partition(key) for key, *_ in chunk] == orders.partitions_of(ids)


@pytest.mark.parametrize("encoding, of, ids, expected", [
    ("int32", "seq", [1, 8, 15], [1, 2, 3]),
    ("int64", "id", [1, 8, 2**40], [1, 8, 2**40]),
    ("int32", "random_int:-7:-7", [1, 2], [-7, -7]),
    ("int64", f"random_int:{-2**63}:{-2**63}", [5], [-2**63]),
])
def test_integers_are_big_endian_signed_as_kafkas_serializers_write_them(encoding, of, ids, expected):
    values = rendered({"encoding": encoding, "of": of}, ids)
    width, code = (4, ">i") if encoding == "int32" else (8, ">q")
    assert values == [struct.pack(code, v) for v in expected]
    assert [int.from_bytes(v, "big", signed=True) for v in values] == expected and {len(v) for v in values} == {width}
    assert rendered({"encoding": encoding}, [15]) == [struct.pack(code, 3)]  # of defaults to seq


def test_bytes_have_their_size_differ_by_record_and_repeat_for_the_same_seed():
    values = rendered({"encoding": "bytes", "size": 64}, list(range(1, 101)))
    assert {len(v) for v in values} == {64} and len(set(values)) > 90
    assert values == rendered({"encoding": "bytes", "size": 64}, list(range(1, 101)))
    assert values != rendered({"encoding": "bytes", "size": 64}, list(range(1, 101)), seed=1)
    assert rendered({"encoding": "bytes", "size": 0}, [1, 2]) == [b"", b""]


def test_random_ints_stay_in_bounds_spread_evenly_and_repeat_on_a_resume():
    ids = list(range(1, 100_001))
    amounts = encodings.random_ints(ids, 0, 0, 1, 100)
    assert min(amounts) == 1 and max(amounts) == 100
    counts = collections.Counter(amounts)
    chi2 = sum((counts[v] - 1000) ** 2 / 1000 for v in range(1, 101))
    assert chi2 < 150  # 99 degrees of freedom: 150 is beyond the 0.1 % tail
    pairs = collections.Counter(zip(amounts, amounts[1:], strict=False))  # consecutive ids are not correlated
    assert max(pairs.values()) < 30 and len(pairs) > 9990
    # a resumed generator draws a later chunk alone: the same values; another seed or slot, others
    assert encodings.random_ints(ids[5000:5512], 0, 0, 1, 100) == amounts[5000:5512]
    assert encodings.random_ints(ids[:1000], 1, 0, 1, 100) != amounts[:1000]
    assert encodings.random_ints(ids[:1000], 0, 1, 1, 100) != amounts[:1000]
    [order] = [json.loads(v) for v in rendered(ORDERS, [777])]
    assert order["amount"] == encodings.random_ints([777], 0, 0, 1, 100)[0]


def test_a_chunk_does_not_depend_on_how_the_ids_are_chunked():
    orders = records(ORDERS)
    whole = orders.chunk(list(range(1, 1001)), TS)
    assert [r for n in range(0, 1000, 37) for r in orders.chunk(list(range(n + 1, min(n + 38, 1001))), TS)] == whole


def test_the_id_of_a_record_comes_from_its_soak_id_header():
    assert encodings.ProfileRecords.id_of(b"\x00\x00\x00\x01", [("soak.seq", b"3"), ("soak.id", b"1234")]) == 1234
    with pytest.raises(ValueError, match="without the soak.id header"):
        encodings.ProfileRecords.id_of(b"{}", None)


@pytest.mark.parametrize("spec, fragment", [
    ([], "v: must be an object with an encoding (json, string, int32, int64, bytes, soak), got list"),
    ({"encoding": "avro"}, "v.encoding: 'avro' is no encoding; allowed: json, string, int32, int64, bytes, soak"),
    ({"encoding": "json"}, "v.template: is missing; any JSON value whose strings may hold placeholders"),
    ({"encoding": "json", "template": {"a": "{ID}"}},
     "v.template.a: {ID} is no placeholder; allowed: {id}, {key}, {seq}, {ts}, {payload}, {random_int:A:B}"),
    ({"encoding": "json", "template": {"a": ["x", "{id"]}},
     "v.template.a[1]: a lone '{' at character 1: write {{ for a literal brace"),
    ({"encoding": "json", "template": "a}b"}, "v.template: a lone '}' at character 2: write }} for a literal brace"),
    ({"encoding": "json", "template": "{random_int:1.5:3}"},
     "v.template: {random_int:1.5:3} is malformed: write {random_int:A:B} with integers A ≤ B"),
    ({"encoding": "json", "template": "{random_int:9:1}"},
     "v.template: {random_int:9:1} draws from an empty range: A must be at most B"),
    ({"encoding": "json", "template": f"{{random_int:0:{2**64}}}"}, "A and B must be 64-bit integers"),
    ({"encoding": "json", "template": {"a": {1, 2}}}, "v.template.a: a set is not JSON; allowed: objects, arrays"),
    ({"encoding": "json", "template": {"a": float("nan")}}, "v.template.a: nan is no JSON number"),
    ({"encoding": "json", "template": {1: "x"}}, "v.template: object keys must be strings, got 1"),
    ({"encoding": "json", "template": json.loads("[" * 40 + "]" * 40)}, "nested deeper than 32 levels"),
    ({"encoding": "json", "template": {}, "size": 3}, "v: ['size'] are not fields of encoding json; it takes template"),
    ({"encoding": "string", "template": 5}, "v.template: must be a string template with placeholders"),
    ({"encoding": "string", "template": "{x}"}, "v.template: {x} is no placeholder"),
    ({"encoding": "int32", "of": "ts"}, "v.of: 'ts' is not what an int32 value can be; allowed: seq, id, "
                                        "random_int:A:B with integers -2147483648 ≤ A ≤ B ≤ 2147483647"),
    ({"encoding": "int32", "of": "random_int:0:2147483648"}, "v.of: 'random_int:0:2147483648' does not fit in an int32"),
    ({"encoding": "int64", "of": "random_int:3"}, "v.of: {random_int:3} is malformed"),
    ({"encoding": "int64", "template": "{id}"}, "v: ['template'] are not fields of encoding int64; it takes of"),
    ({"encoding": "bytes"}, "v.size: must be an integer from 0 to 1_000_000 (bytes of each value), got None"),
    ({"encoding": "bytes", "size": 1_000_001}, "v.size: must be an integer from 0 to 1_000_000"),
    ({"encoding": "bytes", "size": True}, "v.size: must be an integer from 0 to 1_000_000"),
])
def test_a_bad_value_spec_is_refused_naming_where_what_and_what_is_allowed(spec, fragment):
    found = encodings.problems(spec, "v")
    assert any(fragment in problem for problem in found), found
    with pytest.raises(ValueError, match="value"):
        encodings.ProfileRecords("{key}", spec, KEYS, crc32_partition, "", 0)


def test_good_specs_have_no_problems():
    for spec in (ORDERS, {"encoding": "json", "template": [1, "{{}}", {"a": None}]}, {"encoding": "string",
                 "template": ""}, {"encoding": "int32"}, {"encoding": "int64", "of": "random_int:-5:5"},
                 {"encoding": "bytes", "size": 0}):
        assert encodings.problems(spec, "v") == []
    assert encodings.key_problems("customer-{key}-{id}-{random_int:1:3}-{payload}", "k") == []


@pytest.mark.parametrize("template, fragment", [
    ("", "k: must be a non-empty string template such as \"customer-{key}\""),
    (7, "k: must be a non-empty string template"),
    ("c-{ts}", "k: {ts} cannot be in a key: a resumed generator recomputes each record's partition from its key"),
    ("c-{customer}", "k: {customer} is no placeholder"),
    ("c-{", "k: a lone '{' at character 3"),
])
def test_a_bad_key_template_is_refused(template, fragment):
    found = encodings.key_problems(template, "k")
    assert any(fragment in problem for problem in found), found


def test_numeric_tells_which_fields_are_numbers():
    nested = {"encoding": "json", "template": {"a": {"b": "{random_int:1:9}", "c": "n{id}"}, "d": [1.5], "e": True}}
    assert encodings.numeric(ORDERS, "amount") and encodings.numeric(ORDERS, "$.orderId")
    assert not encodings.numeric(ORDERS, "customer") and not encodings.numeric(ORDERS, "missing")
    assert not encodings.numeric(ORDERS, "")  # the value is an object
    assert encodings.numeric(nested, "$.a.b") and not encodings.numeric(nested, "$.a.c")
    assert encodings.numeric(nested, "$.d[0]") and not encodings.numeric(nested, "e")
    assert encodings.numeric({"encoding": "int64"}, "") and encodings.numeric({"encoding": "int32"}, "$")
    assert not encodings.numeric({"encoding": "int64"}, "amount")
    assert not encodings.numeric({"encoding": "string", "template": "{id}"}, "")
    assert not encodings.numeric({"encoding": "avro"}, "") and not encodings.numeric(None, "amount")
    assert encodings.fields(nested) == {"": "object", "$.a": "object", "$.a.b": "number", "$.a.c": "string",
                                        "$.d": "array", "$.d[0]": "number", "$.e": "boolean"}


def test_importing_it_loads_nothing_heavy():
    """The params check imports it: no Kafka client, no Airflow."""
    code = ("import sys; import kafka_soak.clients.encodings; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('confluent_kafka', 'airflow', 'pyspark')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
