"""The reference worker on a released confluent-kafka (param ``worker_versions``): one virtualenv per release, built on
first use and cached in ``.cache/venvs/confluent-kafka/<release>-py<X.Y>-<requirements hash>/``.

A bug of the Python client lives in the librdkafka its wheel bundles, so the suite judges the released wheel: the
virtualenv holds that release (a wheel only: PyPI's source distributions need librdkafka's headers to build) and the
rest of what the worker imports (``requirements.txt`` beside this module, the worker image's too). The worker's own
modules come from the suite: the instance runs the virtualenv's interpreter isolated from the environment
(``python -I``: no ``PYTHONPATH``, no user site) and appends the suite's package directory to its path, after the
virtualenv's own packages, so that the confluent-kafka it imports is the release's even where the suite is installed
beside its own confluent-kafka (the worker checks it at start: ``--client-release``). Built like the Kafka Streams
app (``maven.staged``): into a staging directory renamed into place when complete. ``python -m kafka_soak.cli
worker-venv VERSION`` builds one ahead of time.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from kafka_soak.clients.profile import literal
from kafka_soak.infra.runtime.local import PLUGINS_DIR
from kafka_soak.params import WORKER_VERSION_PATTERN
from kafka_soak.toolchain import maven

log = logging.getLogger(__name__)

CLIENT = "confluent-kafka"
REQUIREMENTS = Path(__file__).with_name("requirements.txt")  # what the worker imports besides the suite
WORKER_MODULE = "kafka_soak.clients.reference.worker"
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"  # the interpreter every release's virtualenv runs on
INSTALL_TIMEOUT_S = 600.0


class WorkerVersionError(maven.BuildError):
    """A confluent-kafka release the worker cannot run on here."""


def requirements(version: str) -> list[str]:
    """The worker's requirements with confluent-kafka pinned to ``version``."""
    lines = [line.strip() for line in REQUIREMENTS.read_text().splitlines() if line.strip()]
    return [f"{CLIENT}=={version}" if re.match(rf"{CLIENT}\b", line) else line for line in lines]


@functools.cache
def requirements_hash() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]


def venv_dir(version: str) -> Path:
    return maven.cache_root() / "venvs" / CLIENT / f"{version}-py{PYTHON}-{requirements_hash()}"


def problem(version: str, param: str = "worker_versions") -> str:
    """Why ``version`` is no release string ("" if it is one); ``param``: what asked for it."""
    if re.match(WORKER_VERSION_PATTERN, version):
        return ""
    return (f"{param}: {version!r} is not a confluent-kafka release (allowed: MAJOR.MINOR.PATCH of a release "
            f"PyPI serves as a wheel for CPython {PYTHON}, e.g. 2.1.0 or 2.13.2)")


def installer(staging: Path, version: str) -> list[list[str]]:
    """The commands that make the virtualenv: with uv where the suite has it (the Makefile installs it beside the
    interpreter), else with venv and pip. Only a wheel of confluent-kafka is taken; the index, certificates and
    find-links are the machine's, as for the suite's own virtualenv."""
    python = str(staging / "bin" / "python")
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    links = ["--find-links", os.environ["PIP_FIND_LINKS"]] if os.environ.get("PIP_FIND_LINKS") else []
    if uv:
        return [[uv, "venv", "--quiet", "--python", sys.executable, str(staging)],
                [uv, "pip", "install", "--quiet", "--native-tls", "--compile-bytecode", "--python", python,
                 "--only-binary", CLIENT, *links, *requirements(version)]]
    return [[sys.executable, "-m", "venv", str(staging)],
            [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--only-binary", CLIENT,
             *requirements(version)]]


def build(version: str, param: str = "worker_versions") -> tuple[Path, float]:
    """The virtualenv of confluent-kafka ``version`` and the seconds this call spent building it (0: cached), or
    ``WorkerVersionError`` naming ``param``, what asked for the release."""
    if problem(version, param):
        raise WorkerVersionError(problem(version, param))
    target = venv_dir(version)

    def make(staging: Path) -> str:
        commands = installer(staging, version)
        for command in commands:
            try:
                proc = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise WorkerVersionError(f"{param}: installing {CLIENT} {version} did not finish within "
                                         f"{INSTALL_TIMEOUT_S:.0f} s (is PyPI slow or out of reach? run it again)") from None
            if proc.returncode != 0:
                raise WorkerVersionError(install_failure(version, proc, param))
        return "\n".join(" ".join(command) for command in commands)

    seconds = maven.staged(target, make)
    if seconds:
        log.info("built the reference worker's virtualenv for %s %s in %.1f s (cached in %s)", CLIENT, version, seconds,
                 target)
    return target, seconds


def install_failure(version: str, proc: subprocess.CompletedProcess[str], param: str = "worker_versions") -> str:
    """Why a release could not be installed (uv's or pip's words), in one line naming the param and what is allowed."""
    said = " ".join((proc.stderr or proc.stdout).split())
    allowed = (f"allowed: a {CLIENT} release PyPI serves as a wheel for CPython {PYTHON} on this platform, which "
               f"`pip download {CLIENT}=={{release}} --only-binary :all:` finds")
    if re.search(r"there is no version of|from versions: none", said):
        return f"{param}: PyPI has no {CLIENT} {version} ({allowed})"
    if re.search(r"has no usable wheels|No matching distribution found", said):
        return f"{param}: PyPI serves no {CLIENT} {version} wheel for CPython {PYTHON} here ({allowed})"
    return f"{param}: cannot install {CLIENT} {version}: {said[-300:]} ({allowed})"


def python(version: str) -> str:
    """The interpreter of the virtualenv of ``version`` (a ``{version}`` placeholder: one per member of a matrix), the
    rest of the path escaped as a command template takes it."""
    return literal(str(venv_dir("\0") / "bin" / "python")).replace("\0", version)


def command(version: str) -> list[str]:
    """The start of an instance's command on a release: its interpreter, isolated, running the worker module with the
    suite's package directory after the virtualenv's packages (a command template, like ``python``)."""
    boot = (f"import runpy, sys; sys.path.append({str(PLUGINS_DIR)!r}); "
            f"runpy.run_module({WORKER_MODULE!r}, run_name='__main__', alter_sys=True)")
    return [python(version), "-I", "-u", "-c", literal(boot), "--client-release", version]
