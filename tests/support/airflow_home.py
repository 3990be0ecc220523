"""A private copy of the Airflow home ``make setup`` made, for a process that must not share its SQLite database."""

from __future__ import annotations

import re
import shutil
from pathlib import Path


def private_airflow(home: str | Path, copy: Path) -> dict[str, str]:
    """A copy of the Airflow home ``make setup`` made (its config and SQLite database) at ``copy``, and the environment
    that points Airflow at it. The config names its database by absolute path: the copy's names the copy."""
    shutil.copytree(home, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns("logs"))
    config = copy / "airflow.cfg"
    config.write_text(re.sub(r"(?m)^sql_alchemy_conn = .*$", f"sql_alchemy_conn = sqlite:///{copy / 'airflow.db'}",
                             config.read_text()))
    return {"AIRFLOW_HOME": str(copy)}
