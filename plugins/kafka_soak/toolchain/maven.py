"""Maven builds into the checkout's cache: Kafka's jars and the Kafka Streams app, once per version.

Both are a ``mvn`` run of a small pom in the repository with Maven's own repository in ``.cache/m2``, written
into a staging directory beside the target and renamed into place when complete (``staged``, which the reference
worker's virtualenvs per confluent-kafka release use too): a build cut short leaves nothing that looks finished, and
two processes building the same version at once both end with one good copy.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kafka_soak.shared.rundir import PROJECT_ROOT

DONE = ".resolved"


class BuildError(ValueError):
    """What a param asked for cannot be built (not served by Maven Central, no Maven, a failed build)."""


def cache_root() -> Path:
    return Path(os.environ.get("SOAK_CACHE_DIR", PROJECT_ROOT / ".cache"))


@functools.cache
def source_hash(source: Path) -> str:
    """The sources of a project to build, hashed once per process: a changed source gets a build of its own."""
    digest = hashlib.sha256()
    for path in sorted(p for p in source.rglob("*") if p.is_file() and "target" not in p.parts):
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def is_built(target: Path) -> bool:
    return (target / DONE).exists()


def staged(target: Path, make: Callable[[Path], str]) -> float:
    """Build ``target`` by ``make(staging)`` into a staging directory beside it, then rename it into place; returns
    the seconds it took (0 when ``target`` was already built). ``make`` returns what built it (kept in the target's
    ``DONE`` file) or raises; a build that raises or is cut short leaves nothing behind that looks built."""
    if is_built(target):
        return 0.0
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    started = time.monotonic()
    try:
        how = make(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    (staging / DONE).write_text(how + "\n")
    try:
        staging.rename(target)
    except OSError:  # built meanwhile by another process
        shutil.rmtree(staging, ignore_errors=True)
    return time.monotonic() - started


def build(target: Path, goals: Callable[[Path], list[str]], param: str, what: str, timeout: float = 600.0) -> float:
    """Run ``mvn <goals(staging)>`` and move the staging directory to ``target``; returns the seconds it took
    (0 when ``target`` was already built). ``BuildError`` names ``param`` and says why: "cannot <what>" (a verb
    phrase, "fetch X's jars"), then the artifact Maven Central does not serve or Maven's first error."""
    if is_built(target):
        return 0.0
    if shutil.which("mvn") is None:
        raise BuildError(f"{param}: Maven (mvn) is needed to {what} and is not installed (make setup installs it)")

    def make(staging: Path) -> str:
        command = ["mvn", "-B", "-q", "-Dstyle.color=never", f"-Dmaven.repo.local={cache_root() / 'm2'}",
                   *goals(staging)]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BuildError(f"{param}: cannot {what}: Maven did not finish within {timeout:.0f} s (is Maven Central "
                             "slow or out of reach? run it again: what it fetched is cached)") from None
        if proc.returncode != 0:
            raise BuildError(f"{param}: cannot {what}: {failure(proc)}")
        return " ".join(command)

    return staged(target, make)


def failure(proc: subprocess.CompletedProcess[str]) -> str:
    """The reason a Maven run failed, in one line."""
    artifact = r"([\w.\-]+:[\w.\-]+):jar:([\w.\-]+)"
    missing = (re.search(rf"(?:artifacts? could not be resolved: |Could not find artifact ){artifact}", proc.stdout)
               or re.search(rf"{artifact} was not found in", proc.stdout))
    if missing:
        return f"Maven Central serves no {missing[1]}:{missing[2]}"
    errors = [line.split("[ERROR]", 1)[1].strip() for line in proc.stdout.splitlines() if "[ERROR]" in line]
    errors = [e for e in errors if e and e != "COMPILATION ERROR :"]  # the compiler's own line follows that header
    return next(iter(errors), proc.stderr.strip()[-300:] or f"mvn exited {proc.returncode}")[:400]
