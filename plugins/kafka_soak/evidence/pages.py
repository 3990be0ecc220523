"""The Jinja environment of kafka-soak's HTML pages (run report, history): autoescaped, with the few filters
the templates share, so both pages look and format alike."""

from __future__ import annotations

import time
from pathlib import Path

import jinja2
from markupsafe import Markup


def utc(epoch_s: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch_s)) if epoch_s else ""


def script_safe(text: str) -> Markup:
    """JSON placed inside a <script> element: a ``</`` in the data (a key, a log line) cannot close it."""
    return Markup(text.replace("</", "<\\/"))


TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                               autoescape=True, trim_blocks=True, lstrip_blocks=True)
TEMPLATES.filters.update(utc=utc, script_safe=script_safe)
