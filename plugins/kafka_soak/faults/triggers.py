"""A deferrable wait for the next program step that tells the person watching what is coming."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


class StepCountdownTrigger(BaseTrigger):
    """Fires at ``moment``; until then logs a countdown to ``label`` and the generator's progress."""

    def __init__(self, moment: float, label: str, progress_file: str | None = None, report_every_s: float = 5.0):
        super().__init__()
        self.moment, self.label, self.progress_file, self.report_every_s = moment, label, progress_file, report_every_s

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("kafka_soak.faults.triggers.StepCountdownTrigger",
                {"moment": self.moment, "label": self.label, "progress_file": self.progress_file,
                 "report_every_s": self.report_every_s})

    def _progress(self) -> str:
        try:
            state = json.loads(Path(self.progress_file).read_text()) if self.progress_file else None
        except (OSError, ValueError):
            state = None
        if not state:
            return ""
        return f"; generator {state['produced']}/{state['records']} records, {state['rate_per_s']:.0f} records/s"

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while (remaining := self.moment - time.time()) > 0:
            self.log.info("%s in %.0f s%s", self.label, remaining, self._progress())
            await asyncio.sleep(min(self.report_every_s, remaining))
        yield TriggerEvent({"woke_at": time.time(), "moment": dt.datetime.fromtimestamp(self.moment).isoformat()})
