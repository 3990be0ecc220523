"""The rules of the Java agent that stalls a thread of a JVM app (Byteman, ``toolchain/byteman.py``), one per stall of
the program, written for each start of an instance and loaded through ``JAVA_TOOL_OPTIONS``, which every JVM reads:
a team's JVM app needs no change and no restart beyond the instance's own starts.

Each rule keeps ``shared/stalls.py``'s protocol: it fires when its step's arm file can be deleted (exactly one thread,
once), writes the trace, and sleeps its seconds in that thread while every other thread of the JVM runs on (the
producer's network thread, the consumer's heartbeat, the other stream threads). The named points are kafka-clients'
own methods, so they hold for Kafka Streams and for any app on the Java producer:

- ``commit``: on entry to ``KafkaProducer#commitTransaction``, after the transaction's offsets were added (Kafka
  Streams' ``StreamsProducer`` sends them just before): the coordinator can time the transaction out between the
  offsets and the ``EndTxn``.
- ``process``: on entry to ``KafkaProducer#send`` once that producer has sent since its last commit or abort, so the
  stall is inside a transaction the broker knows, with records in it, and the stalled thread's next act is to produce.
- ``Class#method``: on entry to an app's own method.

And in a broker's JVM (``sbN@append``): on entry to ``UnifiedLog#appendAsLeader`` of a client's transactional batch
whose transaction is already ongoing on the partition (the broker decided it needs no verification), before the append
takes the log's lock, so the coordinator's markers are appended meanwhile.
"""

from __future__ import annotations

from pathlib import Path

from kafka_soak.shared import java_client, stalls

PRODUCER = "org.apache.kafka.clients.producer.KafkaProducer"
SEND = "send(org.apache.kafka.clients.producer.ProducerRecord, org.apache.kafka.clients.producer.Callback)"
RULES_FILE = "rules.btm"
# Whether a producer has sent since its last commit or abort (Byteman's flags, keyed by the producer object).
SENT_SINCE_COMMIT = f"""RULE kafka-soak: a producer sent a record into its transaction
CLASS {PRODUCER}
METHOD {SEND}
AT EXIT
IF true
DO flag($0)
ENDRULE

RULE kafka-soak: a producer's transaction ends (commit)
CLASS {PRODUCER}
METHOD commitTransaction
AT EXIT
IF true
DO clear($0)
ENDRULE

RULE kafka-soak: a producer's transaction ends (abort)
CLASS {PRODUCER}
METHOD abortTransaction
AT EXIT
IF true
DO clear($0)
ENDRULE
"""


LOG = "org.apache.kafka.storage.internals.log"
# From this line on, a broker's log is the Java UnifiedLog whose append a broker stall stops at (``append_method``).
BROKER_STALLS_SINCE = (4, 1)
# A client's transactional batch whose transaction the partition already holds (what needed no verification).
ONGOING = (f"$3 == {LOG}.AppendOrigin.CLIENT && batch.isTransactional() && "
           "$0.hasOngoingTransaction(batch.producerId(), batch.producerEpoch()) && ")


def append_method(release: tuple[int, int]) -> tuple[str, str]:
    """``UnifiedLog#appendAsLeader`` as a broker release has it (read in each line's jars: 4.2 adds the transaction
    version, 4.3 moves the record classes to ``record.internal``), and the package of its record classes."""
    records = "org.apache.kafka.common.record" + (".internal" if release >= (4, 3) else "")
    version = ", short" if release >= (4, 2) else ""
    return (f"appendAsLeader({records}.MemoryRecords, int, {LOG}.AppendOrigin, org.apache.kafka.server.common."
            f"RequestLocal, {LOG}.VerificationGuard{version})"), records


def where(point: str, release: tuple[int, int] = (0, 0)) -> tuple[str, str, str, str]:
    """The class, method, extra bindings and extra condition of a point's rule (``release``: a broker's, for its own
    points)."""
    if point == "commit":
        return PRODUCER, "commitTransaction", "", ""
    if point == "process":
        return PRODUCER, SEND, "", "flagged($0) && "
    if point == "append":
        method, records = append_method(release)
        return f"{LOG}.UnifiedLog", method, f";\n     batch:{records}.RecordBatch = $1.batches().iterator().next()", ONGOING
    cls, method = point.split("#")
    return cls, method, "", ""


def rule(directory: Path, stall: stalls.Stall, release: tuple[int, int] = (0, 0)) -> str:
    """The rule of one stall: its arm file's deletion is its condition, its trace and its sleep its action."""
    cls, method, binds, condition = where(stall.point, release)
    arm, trace, key = stalls.arm_path(directory, stall.step), stalls.trace_path(directory, stall.step), f"step-{stall.step}"
    return f"""RULE kafka-soak: program step {stall.step} stalls a thread at {stall.point} for {stall.seconds} s
CLASS {cls}
METHOD {method}
AT ENTRY
BIND arm:java.io.File = new java.io.File("{arm}"){binds}
IF {condition}arm.delete()
DO traceOpen("{key}", "{trace}");
   traceln("{key}", "{stalls.STALLED} " + System.currentTimeMillis() + " " + Thread.currentThread().getName());
   delay({stall.seconds * 1000}L);
   traceln("{key}", "{stalls.RESUMED} " + System.currentTimeMillis());
   traceClose("{key}")
ENDRULE
"""


def script(directory: Path, planned: list[stalls.Stall], release: tuple[int, int] = (0, 0)) -> str:
    """Every rule of an instance's or a broker's stalls (and what ``process`` needs to know of its producers)."""
    helpers = SENT_SINCE_COMMIT if any(s.point == "process" for s in planned) else ""
    return "\n".join([helpers, *(rule(directory, s, release) for s in planned)])


class StallAgentError(ValueError):
    """The agent cannot be given to the app's JVM from where the run keeps its files."""


def check(jar: Path, runs: Path) -> None:
    """The agent's jar and the runs directory go into ``JAVA_TOOL_OPTIONS`` (split at blanks) and the rules' string
    literals: refuse a path that neither can hold."""
    for what, path in (("the Byteman agent's jar", jar), ("the runs directory (SOAK_RUNS_DIR)", runs)):
        if not java_client.is_option(str(path)) or "\\" in str(path):
            raise StallAgentError(f"program: a stall of a JVM app loads the suite's Java agent through "
                                  f"JAVA_TOOL_OPTIONS, which cannot take {what} at {str(path)!r} (a blank, a quote or "
                                  "a backslash in its path); move it to a path without them")


def java_options(jar: Path, directory: Path, planned: list[stalls.Stall], release: tuple[int, int] = (0, 0)) -> str:
    """The option that makes a JVM load the agent with its rules (written here): the app's in ``JAVA_TOOL_OPTIONS``,
    a broker's (of ``release``) on its command line."""
    rules = directory / RULES_FILE
    directory.mkdir(parents=True, exist_ok=True)
    rules.write_text(script(directory, planned, release))
    return f"-javaagent:{jar}=script:{rules}"
