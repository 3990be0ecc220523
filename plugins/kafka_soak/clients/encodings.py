"""The key templates and value encodings of a profile's inputs: checked before a run, compiled to render records fast.

A team's app reads its own format, so a profile input says how its records look (``inputs[].key`` and
``inputs[].value``) and the generator writes exactly that. Templates hold placeholders:

    {id}       the record id, 1..records            {seq}   the per-key sequence number, (id - 1) // keys + 1
    {key}      the key number, (id - 1) % keys        {ts}    the produce time in ms (one per chunk of records)
    {payload}  the run's payload string               {random_int:A:B}  an integer in [A, B], drawn from (seed, id, slot)
    {{ }}      literal braces

Value encodings: ``soak`` (the suite's own records, for an app written for its data contract; no headers), ``json``
(``template``: any JSON value whose strings are templates; a string that is exactly one number placeholder becomes a
JSON number), ``string`` (``template``, UTF-8), ``int32``/``int64`` (big-endian signed, as Kafka's
IntegerSerializer/LongSerializer write them, ``of`` seq | id | random_int:A:B, default seq) and ``bytes`` (``size``
random bytes). Keys are string templates; every record but the suite's own also carries the headers ``soak.id`` and
``soak.seq`` (ASCII decimal), by which the checker knows each record and a resumed generator finds where it stopped.

Speed (bench/generator.py): a template is compiled once into ``str.format`` text whose positional fields are the
per-record numbers (``{0}`` id, ``{1}`` key number, ``{2}`` seq, ``{3}``… the draws), with the payload written in at
compile time and ``{ts}`` once per chunk; a chunk is one comprehension. ``{random_int}`` draws are a 64-bit integer mix
of (seed, slot, id), a chunk at a time: cheap, and a resumed generator draws the same values. This module imports
nothing heavy: the params check imports it.
"""

from __future__ import annotations

import json
import math
import random
import re
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from kafka_soak.shared.contracts import ID_HEADER, SEQ_HEADER

# The suite's own records (``{"id", "key", "seq", "payload", "ts"}`` as JSON, keyed ``key-000042``): what an app
# written for kafka-soak's data contract reads, and what its ``id-assignment`` output is judged against.
SOAK = "soak"
# Each encoding and the fields it takes besides ``encoding``.
ENCODINGS: dict[str, tuple[str, ...]] = {"json": ("template",), "string": ("template",), "int32": ("of",),
                                         "int64": ("of",), "bytes": ("size",), SOAK: ()}
PLACEHOLDERS = "{id}, {key}, {seq}, {ts}, {payload}, {random_int:A:B}"
SIMPLE = ("id", "key", "seq", "ts", "payload")
INTEGERS = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}
MAX_BYTES = 1_000_000
MAX_DEPTH = 32  # levels of a JSON template: a bound, so a hostile one is refused rather than recursed into
FIELD = {"id": 0, "key": 1, "seq": 2}  # positional fields of compiled format text; the draws follow
BYTES_OFFSETS = 4096  # a bytes value is a window of one seeded random block, at one of this many offsets

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_RANDOM = re.compile(r"random_int:(-?\d+):(-?\d+)")
_MASK, _GOLDEN = (1 << 64) - 1, 0x9E3779B97F4A7C15

Record = tuple[str, int, str | bytes, list[tuple[str, str]]]
Render = Callable[..., str | bytes]  # (id, key number, seq, *draws) -> value


@dataclass(frozen=True)
class Placeholder:
    name: str  # one of SIMPLE or "random_int"
    low: int = 0
    high: int = 0


def parse(text: str) -> tuple[list[str | Placeholder], list[str]]:
    """A template's literal text and placeholders in order, and what is wrong with it."""
    tokens: list[str | Placeholder] = []
    errors: list[str] = []

    def literal(part: str) -> None:
        if tokens and isinstance(tokens[-1], str):
            tokens[-1] += part
        else:
            tokens.append(part)

    pos = 0
    for match in _TOKEN.finditer(text):
        if match.start() > pos:
            literal(text[pos:match.start()])
        pos = match.end()
        found, inner = match.group(0), match.group(1)
        if found in ("{{", "}}"):
            literal(found[0])
        elif inner is None:
            errors.append(f"a lone {found!r} at character {match.start() + 1}: write {found * 2} for a literal brace")
        elif inner in SIMPLE:
            tokens.append(Placeholder(inner))
        elif bounds := _RANDOM.fullmatch(inner):
            low, high = int(bounds[1]), int(bounds[2])
            lowest, highest = INTEGERS["int64"]
            if low > high:
                errors.append(f"{found} draws from an empty range: A must be at most B")
            elif low < lowest or high > highest:
                errors.append(f"{found}: A and B must be 64-bit integers ({lowest}..{highest})")
            else:
                tokens.append(Placeholder("random_int", low, high))
        elif inner.startswith("random_int"):
            errors.append(f"{found} is malformed: write {{random_int:A:B}} with integers A ≤ B")
        else:
            errors.append(f"{found} is no placeholder; allowed: {PLACEHOLDERS}, and {{{{ }}}} for literal braces")
    if pos < len(text):
        literal(text[pos:])
    return tokens, errors


def random_ints(ids: Iterable[int], seed: int, slot: int, low: int, high: int) -> list[int]:
    """``{random_int:low:high}`` of each id, for the ``slot``-th such placeholder of an input (its value's in order,
    then its key's): ``low + mix(id·φ + salt) mod span`` with a splitmix64 salt of (seed, slot) and a two-round
    xor-shift-multiply mix; uniform to within span / 2⁶⁴, and the same whenever it is drawn again."""
    salt, span = _splitmix(_splitmix(seed & _MASK) ^ slot), high - low + 1
    return [low + (y ^ y >> 29) % span for i in ids for x in ((i * _GOLDEN + salt) & _MASK,)
            for y in ((x ^ x >> 31) * 0xBF58476D1CE4E5B9 & _MASK,)]


def _splitmix(x: int) -> int:
    x = (x + _GOLDEN) & _MASK
    x = (x ^ x >> 30) * 0xBF58476D1CE4E5B9 & _MASK
    x = (x ^ x >> 27) * 0x94D049BB133111EB & _MASK
    return x ^ x >> 31


def problems(value_spec: Any, where: str) -> list[str]:
    """Everything wrong with an input's value spec, each naming where (``where`` and below), what and what is allowed."""
    if not isinstance(value_spec, Mapping):
        return [f"{where}: must be an object with an encoding ({', '.join(ENCODINGS)}), got "
                f"{type(value_spec).__name__}"]
    encoding = value_spec.get("encoding")
    if not isinstance(encoding, str) or encoding not in ENCODINGS:
        return [f"{where}.encoding: {encoding!r} is no encoding; allowed: {', '.join(ENCODINGS)}"]
    takes = ENCODINGS[encoding]
    extra = sorted(str(name) for name in value_spec if name != "encoding" and name not in takes)
    errors = [f"{where}: {extra} are not fields of encoding {encoding}; it takes "
              f"{', '.join(takes) or 'none (the suite writes its own records)'}"] if extra else []
    if encoding == SOAK:
        return errors
    if encoding == "json":
        if "template" not in value_spec:
            return [*errors, f"{where}.template: is missing; any JSON value whose strings may hold placeholders "
                             f"({PLACEHOLDERS}), e.g. {{\"orderId\": \"{{id}}\"}}"]
        return errors + _json_problems(value_spec["template"], f"{where}.template", 0)
    if encoding == "string":
        template = value_spec.get("template")
        if not isinstance(template, str):
            return [*errors, f"{where}.template: must be a string template with placeholders ({PLACEHOLDERS}), got "
                             f"{type(template).__name__}"]
        return errors + [f"{where}.template: {e}" for e in parse(template)[1]]
    if encoding == "bytes":
        size = value_spec.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_BYTES:
            errors.append(f"{where}.size: must be an integer from 0 to {MAX_BYTES:_} (bytes of each value), got {size!r}")
        return errors
    return errors + _of_problems(value_spec.get("of", "seq"), encoding, f"{where}.of")


def _of_problems(of: Any, encoding: str, where: str) -> list[str]:
    low, high = INTEGERS[encoding]
    allowed = f"allowed: seq, id, random_int:A:B with integers {low} ≤ A ≤ B ≤ {high}"
    if of in ("seq", "id"):
        return []
    if not isinstance(of, str) or not of.startswith("random_int"):
        return [f"{where}: {of!r} is not what an {encoding} value can be; {allowed}"]
    tokens, errors = parse(f"{{{of}}}")
    if errors:
        return [f"{where}: {e}" for e in errors]
    draw = tokens[0]
    assert isinstance(draw, Placeholder)
    if draw.low < low or draw.high > high:
        return [f"{where}: {of!r} does not fit in an {encoding}; {allowed}"]
    return []


def _json_problems(value: Any, where: str, depth: int) -> list[str]:
    if depth > MAX_DEPTH:
        return [f"{where}: nested deeper than {MAX_DEPTH} levels"]
    if isinstance(value, Mapping):
        errors = [f"{where}: object keys must be strings, got {name!r}" for name in value if not isinstance(name, str)]
        for name, item in value.items():
            errors += _json_problems(item, f"{where}.{name}", depth + 1)
        return errors
    if isinstance(value, list):
        return [e for n, item in enumerate(value) for e in _json_problems(item, f"{where}[{n}]", depth + 1)]
    if isinstance(value, str):
        return [f"{where}: {e}" for e in parse(value)[1]]
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{where}: {value!r} is no JSON number"]
    if value is None or isinstance(value, (bool, int, float)):
        return []
    return [f"{where}: a {type(value).__name__} is not JSON; allowed: objects, arrays, strings, numbers, true, false, "
            "null"]


def key_problems(template: Any, where: str) -> list[str]:
    """Everything wrong with an input's key template."""
    if not isinstance(template, str) or not template:
        return [f"{where}: must be a non-empty string template such as \"customer-{{key}}\" (placeholders "
                f"{PLACEHOLDERS}), got {template!r}"]
    tokens, errors = parse(template)
    errors = [f"{where}: {e}" for e in errors]
    if Placeholder("ts") in tokens:
        errors.append(f"{where}: {{ts}} cannot be in a key: a resumed generator recomputes each record's partition "
                      "from its key, and the time of the first attempt is gone")
    return errors


def fields(value_spec: Any) -> dict[str, str]:
    """What the records of a value spec hold, by path: ``""`` for the value itself, ``$.a.b`` and ``$.a[0]`` inside a
    JSON value, each with its JSON type (``number``, ``string``, ``boolean``, ``null``, ``object``, ``array``) or
    ``bytes``; empty for a spec with problems (they are reported by ``problems``)."""
    if problems(value_spec, "value"):
        return {}
    encoding = value_spec["encoding"]
    if encoding in INTEGERS:
        return {"": "number"}
    if encoding != "json":
        return {"": "string" if encoding == "string" else "bytes"}
    found: dict[str, str] = {}

    def walk(value: Any, path: str) -> None:
        found[path] = _json_type(value)
        if isinstance(value, Mapping):
            for name, item in value.items():
                walk(item, f"{path or '$'}.{name}")
        elif isinstance(value, list):
            for n, item in enumerate(value):
                walk(item, f"{path or '$'}[{n}]")

    walk(value_spec["template"], "")
    return found


# What a number placeholder can reach, besides a draw's bounds: the largest id and seq are the run's records, a key
# number one less than its keys, a timestamp an epoch millisecond.
TS_MS_MAX = 10**13


def largest(value_spec: Any, field: str, records: int, keys: int) -> int:
    """The largest magnitude a number ``field`` of the input's records takes (``numeric`` says which fields are
    numbers): a literal's, the run's largest id or seq, key number or timestamp, a draw's bound."""
    path = "" if field in ("", "$") else field if field.startswith("$") else f"$.{field}"
    reach = {"id": records, "seq": -(-records // keys), "key": keys - 1, "ts": TS_MS_MAX}
    if value_spec["encoding"] in INTEGERS:
        text = "{" + value_spec.get("of", "seq") + "}"
    else:
        value = value_spec["template"]
        for name, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path):
            value = value[name] if name else value[int(index)]
        if not isinstance(value, str):  # a literal number
            return math.ceil(abs(value))
        text = value
    [token] = parse(text)[0]
    assert isinstance(token, Placeholder)
    return max(abs(token.low), abs(token.high)) if token.name == "random_int" else reach[token.name]


def numeric(value_spec: Any, field: str) -> bool:
    """Whether ``field`` of the input's records is a number: a top-level name, a JSON path ``$.a.b``, or ``""`` (and
    ``$``) for the value itself."""
    path = "" if field in ("", "$") else field if field.startswith("$") else f"$.{field}"
    return fields(value_spec).get(path) == "number"


def _json_type(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "number" if _number(parse(value)[0]) else "string"
    if isinstance(value, bool):
        return "boolean"
    return "null" if value is None else "number"


def _number(tokens: list[str | Placeholder]) -> bool:
    """A JSON template's string that is exactly one number placeholder: written as a JSON number."""
    return len(tokens) == 1 and isinstance(tokens[0], Placeholder) and tokens[0].name != "payload"


class _Format:
    """Templates compiled into ``str.format`` text, split where ``{ts}`` goes; the draws are shared by a record's
    value and key, so each placeholder keeps its own field and slot."""

    def __init__(self, payload: str, draws: list[Placeholder]) -> None:
        self.payload, self.draws, self.parts = payload, draws, [""]

    def literal(self, text: str) -> None:
        self.parts[-1] += text.replace("{", "{{").replace("}", "}}")

    def placeholder(self, p: Placeholder, escape: Callable[[str], str]) -> None:
        if p.name == "ts":
            self.parts.append("")
        elif p.name == "payload":
            self.literal(escape(self.payload))
        elif p.name == "random_int":
            self.parts[-1] += f"{{{len(FIELD) + len(self.draws)}}}"
            self.draws.append(p)
        else:
            self.parts[-1] += f"{{{FIELD[p.name]}}}"

    def template(self, tokens: list[str | Placeholder], escape: Callable[[str], str] = str) -> None:
        for token in tokens:
            if isinstance(token, str):
                self.literal(escape(token))
            else:
                self.placeholder(token, escape)

    def json(self, value: Any) -> None:
        """JSON text as ``json.dumps(separators=(",", ":"), ensure_ascii=False)`` writes it, placeholders filled."""
        if isinstance(value, Mapping):
            self.literal("{")
            for n, (name, item) in enumerate(value.items()):
                self.literal(("," if n else "") + json.dumps(name, ensure_ascii=False) + ":")
                self.json(item)
            self.literal("}")
        elif isinstance(value, list):
            self.literal("[")
            for n, item in enumerate(value):
                self.literal("," if n else "")
                self.json(item)
            self.literal("]")
        elif isinstance(value, str):
            tokens = parse(value)[0]
            if _number(tokens):
                self.placeholder(tokens[0], _json_escape)
            else:
                self.literal('"')
                self.template(tokens, _json_escape)
                self.literal('"')
        else:
            self.literal(json.dumps(value))

    def bind(self) -> Callable[[int], Render]:
        """The render function of a chunk produced at ``ts_ms``."""
        parts = self.parts
        if len(parts) == 1:
            constant = parts[0].format
            return lambda _ts_ms: constant
        return lambda ts_ms: str(ts_ms).join(parts).format


def _json_escape(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _value(spec: Mapping[str, Any], out: _Format, seed: int) -> Callable[[int], Render]:
    """The value encoding compiled: ``(ts_ms) -> render``."""
    encoding = spec["encoding"]
    if encoding == "json":
        out.json(spec["template"])
        return out.bind()
    if encoding == "string":
        out.template(parse(spec["template"])[0])
        return out.bind()
    slot = len(out.draws)  # the value's own draw, if it takes one, is the first argument after seq
    if encoding == "bytes":
        size = spec["size"]
        block = random.Random(seed).randbytes(size + BYTES_OFFSETS)
        out.draws.append(Placeholder("random_int", 0, BYTES_OFFSETS - 1))
        render: Render = lambda i, k, s, *r: block[r[slot]:r[slot] + size]
        return lambda _ts_ms: render
    pack = struct.Struct(">i" if encoding == "int32" else ">q").pack
    of = spec.get("of", "seq")
    if of == "id":
        render = lambda i, k, s, *r: pack(i)
    elif of == "seq":
        render = lambda i, k, s, *r: pack(s)
    else:
        out.draws.append(parse(f"{{{of}}}")[0][0])
        render = lambda i, k, s, *r: pack(r[slot])
    return lambda _ts_ms: render


class ProfileRecords:
    """A profile input's records by id, as the generator's ``Records`` gives them: ``(key, partition, value,
    headers)`` per id, a chunk at a time. A key of the key number alone is rendered once per key; one that holds
    ``{id}``, ``{seq}`` or a draw is rendered, and partitioned by ``partition_of``, per record."""

    def __init__(self, key_template: str, value: Mapping[str, Any], keys: int, partition_of: Callable[[str], int],
                 payload: str, seed: int) -> None:
        errors = key_problems(key_template, "key template") + problems(value, "value")
        if errors:
            raise ValueError("; ".join(errors))
        self.keys, self.seed, self.partition_of = keys, seed, partition_of
        draws: list[Placeholder] = []
        self.value = _value(value, _Format(payload, draws), seed)
        key_tokens = parse(key_template)[0]
        key_format = _Format(payload, draws)
        key_format.template(key_tokens)
        [key_text] = key_format.parts  # a key holds no {ts}
        self.key = key_text.format
        self.draws = draws
        self.per_key = all(isinstance(t, str) or t.name in ("key", "payload") for t in key_tokens)

    @cached_property
    def names(self) -> list[str] | None:
        """Each key's name, worked out once when the first chunk is asked for (when a key holds only the key number)."""
        return [self.key(0, k, 0) for k in range(self.keys)] if self.per_key else None

    @cached_property
    def partitions(self) -> list[int] | None:
        return [self.partition_of(name) for name in self.names] if self.names is not None else None

    def chunk(self, ids: list[int], ts_ms: int, per_key: bool = True) -> list[Record]:
        """``(key, partition, value, headers)`` per id, the headers ``soak.id`` and ``soak.seq``; ``per_key``: from
        the names worked out once per key, where the key template allows."""
        value, keys = self.value(ts_ms), self.keys
        columns = [random_ints(ids, self.seed, slot, d.low, d.high) for slot, d in enumerate(self.draws)]
        draws = zip(*columns, strict=True) if columns else [()] * len(ids)
        if per_key and self.names is not None and self.partitions is not None:
            names, partitions = self.names, self.partitions
            return [(names[k], partitions[k], value(i, k, s, *r), [(ID_HEADER, str(i)), (SEQ_HEADER, str(s))])
                    for i, r in zip(ids, draws, strict=True) for k, s in (((i - 1) % keys, (i - 1) // keys + 1),)]
        key, partition_of = self.key, self.partition_of
        return [(name, partition_of(name), value(i, k, s, *r), [(ID_HEADER, str(i)), (SEQ_HEADER, str(s))])
                for i, r in zip(ids, draws, strict=True) for k, s in (((i - 1) % keys, (i - 1) // keys + 1),)
                for name in (key(i, k, s, *r),)]

    def one(self, record_id: int, ts_ms: int) -> Record:
        """The record of one id, as ``chunk`` gives it, without working out every key."""
        return self.chunk([record_id], ts_ms, per_key=False)[0]

    def partitions_of(self, ids: list[int], step: int = 4096) -> list[int]:
        """The partition of each id (a resume works out which ids each partition still lacks)."""
        if self.partitions is not None:
            partitions, keys = self.partitions, self.keys
            return [partitions[(i - 1) % keys] for i in ids]
        return [record[1] for n in range(0, len(ids), step) for record in self.chunk(ids[n:n + step], 0)]

    @staticmethod
    def id_of(_value: bytes | None, headers: list[tuple[str, bytes]] | None) -> int:
        """The id of a record written from this profile: its ``soak.id`` header."""
        found = dict(headers or ()).get(ID_HEADER)
        if found is None:
            raise ValueError(f"a record without the {ID_HEADER} header: the topic holds records no generator of this "
                             "profile wrote")
        return int(found)
