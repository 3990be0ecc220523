"""Renders docs/benchmarks.md: the machine, the versions and the command, then each benchmark's section.

Sections come from ``bench/results/<name>.md`` in a fixed order (each carries its own command); a
benchmark that has not been run yet is named as missing rather than left out silently. ``bench/notes.md``
(what earlier runs showed, such as missed targets) closes the page.
"""

from __future__ import annotations

import json
import sys

from common import PACE, RESULTS_DIR, ROOT, machine, versions

ORDER = ("broker_start", "broker_recovery", "broker_jit", "toggle", "generator", "validation", "validation_profile",
         "checker_jit", "checker_class_data", "checker_scaling", "checker_floors", "dag_start", "overhead", "run_processes",
         "reproduction", "bugs", "fault_controls", "quota_eos", "workflow_rollback", "report_night", "sampler_cost",
         "night_soak", "leak_night")
DOC = ROOT / "docs" / "benchmarks.md"
NOTES = ROOT / "bench" / "notes.md"


def header(sizes: set[str]) -> str:
    m, v = machine(), versions()
    size = " / ".join(sorted(sizes)) or "none"
    return f"""# Benchmarks

Each figure is measured next to its baseline, the simplest thing a user could do instead, in the same run
on the same machine; the ratio is figure / baseline. Figures that miss their target say so. Regenerate
with `make bench` (quick size, a few minutes per benchmark) or `make bench SIZE=large`; every section names
the command that produced it and when.

| machine | |
|---|---|
| cores (`nproc`) | {m['nproc']} |
| memory | {m['memory_gib']} GiB |
| CPU | {m['cpu']} |
| kernel | {m['kernel']} |

| version | |
|---|---|
{chr(10).join(f"| {name} | {version} |" for name, version in v.items())}

Size of the figures below: **{size}**. The machine is shared with other work while benchmarks run, so
figures taken at different moments vary; baselines run in the same run for that reason. Each section says how fast
a core was when it finished: the seconds one Python process took for `{PACE}` (about 1 s on a quiet day here;
3 s on a day the host's other guests took two thirds of it, which the load average does not show).
"""


def main() -> int:
    sections, sizes = [], set()
    for name in ORDER:
        md, data = RESULTS_DIR / f"{name}.md", RESULTS_DIR / f"{name}.json"
        if md.exists():
            sections.append(md.read_text().strip())
            if data.exists():
                sizes.add(json.loads(data.read_text()).get("size", ""))
        else:
            sections.append(f"## {name}\n\nNot run yet: `python bench/{name}.py --size quick`.")
    if NOTES.exists():
        sections.append(NOTES.read_text().strip())
    DOC.write_text(header(sizes - {""}) + "\n" + "\n\n".join(sections) + "\n")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
