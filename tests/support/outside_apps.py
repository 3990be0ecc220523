"""Apps from outside the suite, written as a team would write them, for the tests that soak an unmodified app.

``orders-streams`` (``tests/apps/orders-streams``) is a Kafka Streams app with topics, JSON schema and serdes of its
own: it enriches orders keyed by customer and keeps each customer's order count and order total, and with
``--fault`` it plants one known defect (order 77 dropped from the enriched stream, or counted twice). It is built
once per Kafka Streams release with Maven into ``.cache/tests/orders-streams/<source hash>/<release>/``
(``orders-streams.jar`` and its ``lib/``), the
way ``kafka_soak.clients.reference.streams`` builds the reference app: two pytest-xdist workers building it at once both end
with the one good copy.

``orders-py`` (``tests/apps/orders-py``) is a confluent-kafka transactional app that copies no header: the order id
stays in its output value.

``stuck-consumer`` (``tests/apps/stuck-consumer``) joins the group and never commits, an ``app_command`` that holds
a run in its drain for as long as it runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kafka_soak.backends.kafka_jars import java_executable
from kafka_soak.toolchain import maven
from support import ROOT

APPS = ROOT / "tests" / "apps"
ORDERS_STREAMS = APPS / "orders-streams"
ORDERS_MAIN_CLASS = "com.example.orders.OrdersApp"
ORDERS_PY = APPS / "orders-py" / "orders_enricher.py"
STUCK_CONSUMER = APPS / "stuck-consumer" / "stuck_consumer.py"


STREAMS_VERSION = "4.3.1"  # the Kafka Streams release its pom builds on unless told another


def build_orders_streams(version: str = STREAMS_VERSION) -> Path:
    """The Kafka Streams app built on Kafka Streams ``version`` (its jar and ``lib/``), on first use: the same
    source on another release, as a team's CI builds its app for each release it runs."""
    target = maven.cache_root() / "tests" / "orders-streams" / maven.source_hash(ORDERS_STREAMS) / version
    maven.build(target, lambda staging: [
        "-f", str(ORDERS_STREAMS / "pom.xml"), f"-Dkafka-streams.version={version}", f"-Dbuild.dir={staging}",
        "package", "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={staging / 'lib'}"],
        "orders-streams", f"build the outside Kafka Streams app tests/apps/orders-streams on Kafka Streams {version}")
    return target


def orders_streams_command(*faults: str, versions: tuple[str, ...] = ()) -> list[str]:
    """One instance of the Kafka Streams app as a profile starts it: its properties file and its four topics from the
    profile's placeholders, and the planted ``faults`` (``drop``, ``double-count``). With ``versions`` (the profile's),
    its build on each, picked by ``{version}``."""
    builds = [build_orders_streams(v) for v in versions or (STREAMS_VERSION,)]
    home = str(builds[0].parent / "{version}") if versions else str(builds[0])
    return [java_executable(), "-Xmx256m", "-cp", f"{home}/orders-streams.jar:{home}/lib/*", ORDERS_MAIN_CLASS,
            "--config", "{properties_file}", "--input", "{topic:orders}", "--enriched", "{topic:orders-enriched}",
            "--count", "{topic:orders-count}", "--total", "{topic:orders-total}",
            *(["--fault", ",".join(faults)] if faults else [])]


# Their input, as the profile tells the generator to write it: JSON orders keyed by customer.
ORDERS_KEY = "customer-{key}"
ORDERS_VALUE = {"encoding": "json", "template": {"orderId": "{id}", "customer": "customer-{key}",
                                                 "amount": "{random_int:1:100}", "seq": "{seq}"}}
ORDERS = {"topic": "orders", "key": ORDERS_KEY, "value": ORDERS_VALUE}
ORDERS_PY_READY = "partitions assigned: "  # its own line, once it has partitions to work on
ORDERS_PY_ARGS = ["--config", "{properties_file}", "--input", "{topic:orders}", "--output", "{topic:orders-enriched}"]


def orders_py_profile(image: str = "", hang_at: int | None = None) -> dict:
    """The Python app's profile: a local process of this interpreter, or a container of its ``image`` (whose
    entrypoint is the app); with ``hang_at``, it stalls on that order (its planted fault). It copies no header, so the
    order id in its output value identifies each record; it says it got to work when it logs its partitions (``ready``).
    A 6 s session (Kafka's minimum) and 10 s transactions: a killed instance's partitions and open transaction come
    back quickly."""
    args = [*ORDERS_PY_ARGS, *(["--hang-at", str(hang_at)] if hang_at else [])]
    return {"name": "orders-py", "group_id": "orders-py",
            "command": args if image else [sys.executable, str(ORDERS_PY), *args],
            **({"image": image} if image else {}),
            "client_properties": {"session.timeout.ms": 6000, "transaction.timeout.ms": 10000},
            "ready": ORDERS_PY_READY, "inputs": [ORDERS],
            "outputs": [{"topic": "orders-enriched", "contract": "one-to-one", "of": "orders",
                         "id_from": "json:$.orderId"}]}


def contract_app_profile(*worker_args: str) -> dict:
    """An app written for kafka-soak's own data contract, described by a profile as any team's app is: the reference
    worker, started by the profile's command and told its topics by the profile's placeholders (``worker_args``: its
    bug switches). Its input is the suite's own records, its output judged by the id-assignment contract with its
    self-check on a topic of the profile. A 6 s session: a killed instance's partitions come back quickly."""
    return {"name": "contract-app", "group_id": "contract-app",
            "command": [sys.executable, "-m", "kafka_soak.clients.reference.worker", "--bootstrap", "{bootstrap_servers}",
                        "--app-id", "{app_id}", "--instance", "{instance}", "--step", "{step}",
                        "--input-topic", "{topic:events}", "--output-topic", "{topic:event-ids}",
                        "--changelog-topic", "{topic:ids-changelog}", "--assertions-topic", "{topic:self-check}",
                        "--session-timeout-ms", "6000", *worker_args],
            "topics": [{"name": "ids-changelog"}, {"name": "self-check", "partitions": 1}],
            "inputs": [{"topic": "events", "value": {"encoding": "soak"}}],
            "outputs": [{"topic": "event-ids", "contract": "id-assignment", "of": "events", "assertions": "self-check"}]}


def stuck_app_command() -> list[str]:
    """An ``app_command`` that joins the run's group, owns its input partitions and never commits (the drain waits on
    it until it times out); a stop makes it leave the group."""
    return [sys.executable, str(STUCK_CONSUMER), "{bootstrap_servers}", "{app_id}", "{app_id}-{instance}",
            "{input_topic}"]


def output_subject(name: str, **contract) -> dict:
    """A judged output of a team's app (orders-py's) as the checker's --subjects gives it (subjects.judged)."""
    return {"name": name, "app_id": "orders-enricher", "version": "", "instances": "", "output": name, "assertions": "",
            "partitions": 4, "of": "orders", "input_value": {"encoding": "json", "template": {}}, **contract}
