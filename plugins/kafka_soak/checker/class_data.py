"""Class-data sharing for a JVM this machine starts again and again with the same class path: the checker's Spark
driver loads and verifies the same thousands of classes in every run. JDK 17 dumps the classes a JVM loaded into an
archive when it exits (``-XX:ArchiveClassesAtExit``, a dynamic CDS archive); a later JVM maps them from it
(``-XX:SharedArchiveFile``) instead: the validate job of 6 000 records in 0.86x the wall time and CPU
(``bench/checker_class_data.py``). The run that dumps the archive (the machine's first) takes about 20 s longer, once.

An archive is kept in the project's cache under a name made of what it is valid for (the ``java`` that runs it and
the jars of its class path); a JVM that finds it does not match says so and runs without it (``-Xshare:auto``). One
JVM dumps it: runs that start while it is being dumped (several checkers at once, on a machine's first runs) run
without it rather than each paying the dump (``claim``)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import psutil

from kafka_soak.backends.kafka_jars import java_executable
from kafka_soak.toolchain import maven


def archives_dir() -> Path:
    return maven.cache_root() / "class-data"


@dataclass(frozen=True)
class SharedArchive:
    path: Path

    @classmethod
    def of(cls, name: str, class_path: list[Path]) -> SharedArchive:
        """The archive of ``name``'s JVM for this machine's ``java`` and that class path."""
        java = Path(java_executable())
        java = java.resolve() if java.exists() else java
        stamp = ":".join([str(java), str(java.stat().st_mtime_ns if java.exists() else 0), *sorted(map(str, class_path))])
        digest = hashlib.sha256(stamp.encode()).hexdigest()[:12]
        return cls(archives_dir() / f"{name}-{digest}.jsa")

    @property
    def staging(self) -> Path:
        """Where this process's JVM dumps the archive: two JVMs dumping at once never write one file."""
        return self.path.with_name(f".{self.path.name}.{os.getpid()}")

    @property
    def claim(self) -> Path:
        """Who dumps the archive now: the process whose PID it holds."""
        return self.path.with_name(f".{self.path.name}.dumping")

    def java_option(self) -> str:
        """The option that maps the archive, or that dumps it at the JVM's exit when there is none yet and no other
        process is dumping it (quietly: the dump warns once per class it leaves out, a thousand lines in the checker's
        log); none while another one is."""
        if self.path.is_file():
            return f"-XX:SharedArchiveFile={self.path}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.take_claim():
            return ""
        return f"-XX:ArchiveClassesAtExit={self.staging} -Xlog:cds=off"

    def take_claim(self) -> bool:
        """Whether this process may dump the archive: the claim is its own, or was a process's that is gone."""
        for _ in range(2):
            try:
                fd = os.open(self.claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if alive(self.claim):
                    return False
                self.claim.unlink(missing_ok=True)  # its process died before it could keep the archive
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(str(os.getpid()))
            return True
        return False

    def keep(self) -> None:
        """Put the archive this process's JVM dumped in place (one that did not exit normally wrote none), and give
        the claim back."""
        if self.staging.is_file() and self.staging.stat().st_size:
            os.replace(self.staging, self.path)
        if self.claim.is_file() and self.claim.read_text().strip() == str(os.getpid()):
            self.claim.unlink(missing_ok=True)


def alive(claim: Path) -> bool:
    """Whether the process a claim names still runs."""
    try:
        pid = claim.read_text().strip()
    except FileNotFoundError:
        return False
    return not pid or pid.isdigit() and psutil.pid_exists(int(pid))  # no PID yet: its process is writing it
