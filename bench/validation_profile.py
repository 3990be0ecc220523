"""The checker on a team's app (a profile's outputs) against the reference app's contract path, side by side.

    python bench/validation_profile.py --size quick   # 1M input records, 2 rounds
    python bench/validation_profile.py --size large   # 1M input records, 4 rounds

One Apache Kafka broker (backend local) holds two histories of the same size, keys and partitions (``soak_history``):
the reference app's (``History``, its JSON contract) and a team's app's (``ProfileHistory``: docs/own-app.md's orders
in the profile's own format with the soak's headers, an enriched one-to-one output that carries them, and a count
table). Each round runs the real job (``spark-submit spark_jobs/validate_soak.py``, local[2], the conf of the DAG's
validate task, ``--subjects`` as ``subjects.judged`` gives them) once per variant (``VARIANTS``), in alternating order;
every verdict must count exactly the anomalies planted in what it judged. Measured per job: time to the verdict, its
phases (the job logs ``phase <name>: <s> s``), peak RSS. Writes ``bench/results/validation_profile.{json,md}``.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace
from typing import Any, NamedTuple

import common
import soak_history
from validation import GIB, PHASES, label, run_spark

from kafka_soak.backends.local_kafka import LocalKafkaBackend
from kafka_soak.clients import profile as profiles
from kafka_soak.clients import subjects
from kafka_soak.shared import contracts

SIZES = {"quick": (1_000_000,), "large": (1_000_000,)}
ROUNDS = {"quick": 2, "large": 4}


class Variant(NamedTuple):
    """One job of a round: what it judges (``judged``: the profile's outputs; none: the reference app's history)."""

    name: str
    what: str
    judged: tuple[str, ...]


VARIANTS = (Variant("reference", "reference app (id-assignment contract)", ()),
            Variant("one_to_one", "profile: `orders-enriched` (one-to-one)", ("orders-enriched",)),
            Variant("with_count", "profile: `orders-enriched` + `orders-count` (aggregate count)",
                    ("orders-enriched", "orders-count")))
PROFILE_TARGET = "one_to_one"  # the variant whose time to the verdict must be no more than the reference's


def profile_subjects(h: soak_history.ProfileHistory, topics: dict[str, str], judged: tuple[str, ...]) -> list[dict]:
    """The profile's subject as ``provision`` records it (``subjects.build``) with only the ``judged`` outputs; the
    job gets them through ``job_args`` as the DAG's validate task does."""
    app = h.profile
    names = {profiles.role(name, app): topics[name] for name in app.names()}
    return [replace(s, outputs=[o for o in s.outputs if o["name"] in judged]).as_dict()
            for s in subjects.build({"app_profile": app.as_dict()}, names)]


def expected(variant: Variant, reference: soak_history.History, profile: soak_history.ProfileHistory) -> dict[str, int]:
    """The anomalies a variant's verdict must count: those planted in what it judges, by its outputs' contracts."""
    if not variant.judged:
        return reference.planted
    judged = {a for o in profile.profile.judged() if o.topic in variant.judged for a in contracts.CONTRACTS[o.contract].judged}
    return {anomaly: n for anomaly, n in profile.planted.items() if anomaly in judged}


def measure(records: int, rounds: int) -> dict[str, Any]:
    """Both histories on one broker, then ``rounds`` rounds of every variant (the order reversed every other round)."""
    work = common.runs_dir(f"validation-profile-{records}")
    reference, profile = soak_history.History.of(records), soak_history.ProfileHistory.of(records)
    backend = LocalKafkaBackend(work)
    runs: list[dict[str, Any]] = []
    try:
        cluster = backend.provision({**reference.topics(), **profile.topics()}, prefix=f"bench-profile-{records}")
        topics, setup = cluster.topics, {}
        for name, history in (("reference", reference), ("profile", profile)):
            started = time.monotonic()
            sent = soak_history.write(cluster.bootstrap_servers, topics, history)
            setup[name] = {"written_s": round(time.monotonic() - started, 1), "records": sent,
                           "planted": history.planted}
            print(f"{records}: {name} history written in {setup[name]['written_s']:.0f} s ({sent}), "
                  f"planted {history.planted}", flush=True)
        for n in range(rounds):
            for variant in VARIANTS if n % 2 == 0 else VARIANTS[::-1]:
                given = profile_subjects(profile, topics, variant.judged) if variant.judged else None
                input_topic = topics[profile.profile.input.topic] if variant.judged else topics["input"]
                run = run_spark(work, cluster.bootstrap_servers, {**topics, "input": input_topic}, records,
                                subjects=given, name=f"{variant.name}-{n + 1}")
                found = {anomaly: count for anomaly, count in run["anomalies"].items() if count}
                planted = expected(variant, reference, profile)
                if found != planted or run["status"] != "failed":
                    raise RuntimeError(f"{records}, {variant.name}, round {n + 1}: verdict {run['status']}, found "
                                       f"{found}, planted {planted}; see {run['log']}")
                runs.append({"variant": variant.name, "round": n + 1, "planted": planted, **run})
                print(f"{records}, round {n + 1}, {variant.name}: {run['to_verdict_s']:.1f} s to the verdict "
                      f"({run['phases']}), found {found}", flush=True)
    finally:
        backend.release(None)
    return {"records": records, "partitions": reference.partitions, "keys": reference.keys, "rounds": rounds,
            "setup": setup, "work_dir": str(work), "runs": runs}


def of(run: dict[str, Any], variant: str) -> list[dict[str, Any]]:
    return [r for r in run["runs"] if r["variant"] == variant]


def median(run: dict[str, Any], variant: str, key: str) -> float:
    return statistics.median(r[key] for r in of(run, variant))


def paired_ratios(run: dict[str, Any], variant: str) -> list[float]:
    """Per round, the variant's time to the verdict over the reference's in the same round."""
    reference = {r["round"]: r["to_verdict_s"] for r in of(run, "reference")}
    return [r["to_verdict_s"] / reference[r["round"]] for r in of(run, variant)]


def figures(run: dict[str, Any]) -> list[dict[str, Any]]:
    n, found = label(run["records"]), []
    for variant in VARIANTS[1:]:
        target = variant.name == PROFILE_TARGET
        value, base = median(run, variant.name, "to_verdict_s"), median(run, "reference", "to_verdict_s")
        found += [
            common.figure(f"time to verdict, {variant.name}, {n} (median)", value, "s", base,
                          "≤ 1 (no slower than the reference)" if target else "", value <= base if target else None,
                          f"median of {run['rounds']}; reference: the reference app's history of the same size"),
            common.figure(f"time to verdict over the same round's reference, {variant.name}, {n} (median)",
                          statistics.median(paired_ratios(run, variant.name)), "×", None, "", None,
                          "the ratio of each round, then their median"),
            common.figure(f"time to verdict, {variant.name}, {n} (min)", min(r["to_verdict_s"] for r in
                                                                             of(run, variant.name)), "s",
                          min(r["to_verdict_s"] for r in of(run, "reference")), "", None),
            common.figure(f"CPU seconds of the job, {variant.name}, {n} (median)", median(run, variant.name, "cpu_s"),
                          "s", median(run, "reference", "cpu_s"), "", None,
                          "the whole job's process tree: JVM, Python driver and workers"),
            common.figure(f"peak RSS, {variant.name}, {n} (median)", median(run, variant.name, "peak_rss_bytes") / GIB,
                          "GiB", median(run, "reference", "peak_rss_bytes") / GIB, "", None,
                          "JVM + Python driver + Python workers"),
        ]
    return found


def phase_table(run: dict[str, Any]) -> str:
    """Median seconds of each phase, per variant."""
    rows = ["| phase | " + " | ".join(v.name for v in VARIANTS) + " |", "|---|" + "---|" * len(VARIANTS)]
    for key, what in (*PHASES, ("to_verdict_s", "**time to verdict**"), ("wall_s", "whole job"),
                      ("cpu_s", "CPU seconds of the whole job")):
        cells = []
        for v in VARIANTS:
            values = [r[key] if key.endswith("_s") else r["phases"].get(key) for r in of(run, v.name)]
            cells.append("—" if None in values else f"{statistics.median(values):.1f} s")
        rows.append(f"| {what}{'' if key.endswith('_s') else f' (`{key}`)'} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def runs_table(run: dict[str, Any]) -> str:
    rows = ["| round | variant | to verdict | whole job | CPU | read | frames | mean 1-min load | found |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in run["runs"]:
        found = ", ".join(f"{a} {n}" for a, n in r["anomalies"].items() if n)
        rows.append(f"| {r['round']} | {r['variant']} | {r['to_verdict_s']:.1f} s | {r['wall_s']:.1f} s | {r['cpu_s']:.0f} s | "
                    f"{r['phases'].get('read', 0):.1f} s | {r['phases'].get('frames', 0):.1f} s | {r['mean_load']} | "
                    f"{found} |")
    return "\n".join(rows)


def differences(run: dict[str, Any], variant: str) -> str:
    """Per phase, the median over rounds of the variant's seconds less the reference's in the same round."""
    reference = {r["round"]: r for r in of(run, "reference")}

    def seconds(r: dict[str, Any], key: str) -> float:
        return r[key] if key.endswith("_s") else r["phases"].get(key, 0.0)

    cells = []
    for key in ("read", "frames", "suites", "timeline", "to_verdict_s", "cpu_s"):
        deltas = [seconds(r, key) - seconds(reference[r["round"]], key) for r in of(run, variant)]
        longer = sum(d > 0 for d in deltas)
        cells.append(f"`{key.removesuffix('_s')}` {statistics.median(deltas):+.1f} s (longer in {longer} of {len(deltas)})")
    return ", ".join(cells)


def body(run: dict[str, Any]) -> str:
    setup, n = run["setup"], label(run["records"])
    ratios = "; ".join(f"{v.name} {', '.join(f'{x:.3f}×' for x in paired_ratios(run, v.name))}" for v in VARIANTS[1:])
    variants = "\n".join(f"- `{v.name}`: {v.what}" for v in VARIANTS)
    written = {name: f"written in {h['written_s']:.0f} s: " + ", ".join(f"{role} {n:,}" for role, n in h["records"].items())
               + "; planted " + ", ".join(f"{anomaly} {n}" for anomaly, n in h["planted"].items())
               for name, h in setup.items()}
    return f"""The real job (`spark-submit spark_jobs/validate_soak.py`, `local[2]`, the conf of the DAG's validate task) on
two histories of {n} input records on one Apache Kafka broker, {run['partitions']} partitions a topic and
{run['keys']} keys each, {run['rounds']} rounds of every variant in alternating order:

{variants}

The reference history is `soak_history.History` ({written['reference']}). The profile's is
`soak_history.ProfileHistory` ({written['profile']}): docs/own-app.md's orders (`{{"orderId", "customer", "amount",
"seq"}}` JSON, key `customer-<k>`, the headers `soak.id` and `soak.seq`) as the generator writes them, each enriched
into `orders-enriched` with its headers, and a count table `orders-count` (big-endian int64, a key's count after every
{soak_history.COUNT_EVERY} of its orders and after its last). Its subjects are the profile's as `subjects.build`
records them, given to the job by `job_args` as the DAG's validate task does. Every verdict counted exactly the
anomalies planted in what it judged (the benchmark stops otherwise).

Per round, each profile variant's time to the verdict over the reference's in the same round: {ratios}. The
profile's one-to-one output against the reference, phase by phase (median of the per-round differences; `cpu`: CPU
seconds of the whole job): {differences(run, PROFILE_TARGET)}.

What each job does beyond the launch, session, GX import and `app_health` suite they share:
- `reference`: reads input, output and assertions as JSON (`from_json` in the JVM); frames: a window by id over input
  and output (2N rows), one by key over the outputs, two aggregations (ids per key, keys per id); suites `input_ids`,
  `outputs`, `key_ids`, `assigned_ids`, `assertions`.
- `one_to_one`: reads input and output raw with their headers (Spark's Kafka source with `includeHeaders`), the id
  and seq from the last `soak.id`/`soak.seq` header of each record; frames: the same window by id (the outputs take
  their key and seq from their input in it) and one by key and partition over the outputs; suites `input_ids` and
  `outputs`.
- `with_count`: as `one_to_one`, with the input's values kept in its cache; then the table (read raw), two
  aggregations (the last value per key and partition, then per key over input and table) and its own suites
  (`input_ids` again, `aggregates`) and Data Docs: a second subject judged after the first.

Median seconds per phase:

{phase_table(run)}

Every job:

{runs_table(run)}
"""


def main() -> int:
    size = common.parse_size(__doc__.splitlines()[0])
    [run] = [measure(records, ROUNDS[size]) for records in SIZES[size]]
    common.write_results("validation_profile", "Validation of a team's app (profile) against the reference contract",
                         size, figures(run), body(run), {"versions": common.versions(), **run})
    return 0


if __name__ == "__main__":
    sys.exit(main())
