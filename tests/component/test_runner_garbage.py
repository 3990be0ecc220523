"""`airflow dags test` (``make soak``'s runner) through many deferred steps: what it keeps of the task runs before is
freed at each deferral (``step_operator.free_runner_garbage``), so a night of steps does not pile up descriptors."""

from __future__ import annotations

import os
import re
import subprocess

from support.airflow_home import private_airflow

STEPS = 20
# A mapped deferrable task as the program's steps are one: it collects before it defers, as ProgramStepOperator does,
# and says how many epoll descriptors the runner then holds. It counts once the runner is quiet: each task run's
# supervisor services its socket from a thread that ends up to a second after the run, and keeps the supervisor (and
# its selector) alive until then, so a count taken at once also depends on how soon the machine started the next step
# (4 to 6 on a busy machine, 3 once those threads ended).
DAG_FILE = f'''
import datetime as dt, os, threading, time
from airflow.sdk import DAG, BaseOperator
from airflow.triggers.temporal import DateTimeTrigger
from kafka_soak.faults.step_operator import free_runner_garbage

def quiet():
    """Until this task run's supervisor thread is the only one: the earlier runs' have ended."""
    end = time.monotonic() + 60
    while sum(t.name.endswith("(_handle_socket_comms)") for t in threading.enumerate()) > 1:
        assert time.monotonic() < end, [t.name for t in threading.enumerate()]
        time.sleep(0.05)

def epolls():
    held = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            held += os.readlink(f"/proc/self/fd/{{fd}}") == "anon_inode:[eventpoll]"
        except OSError:  # the listing's own descriptor, closed since
            pass
    return held

class Step(BaseOperator):
    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = n

    def execute(self, context):
        quiet()
        free_runner_garbage()
        print(f"step {{self.n}} collected: {{epolls()}} epoll descriptors", flush=True)
        self.defer(trigger=DateTimeTrigger(moment=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=0.1)),
                   method_name="resumed")

    def resumed(self, context, event=None):
        pass

with DAG("runner_garbage", start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), schedule=None, catchup=False):
    Step.partial(task_id="step").expand(n=list(range({STEPS})))
'''


def test_a_run_of_many_deferred_steps_holds_its_descriptors_flat(tmp_path):
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "runner_garbage.py").write_text(DAG_FILE)
    env = {**os.environ, **private_airflow(os.environ["AIRFLOW_HOME"], tmp_path / "airflow"),
           "AIRFLOW__CORE__DAGS_FOLDER": str(dags)}
    out = subprocess.run(["airflow", "dags", "test", "runner_garbage"], env=env, capture_output=True, text=True,
                         timeout=600)
    held = {int(n): int(count) for n, count in re.findall(r"step (\d+) collected: (\d+) epoll", out.stdout + out.stderr)}
    assert out.returncode == 0 and len(held) == STEPS, (out.stdout + out.stderr)[-3000:]
    # Airflow runs the mapped steps in any order: by the order they ran in, from the second on (the first collection
    # froze what Airflow had made before, the first step's own supervisors with it), the runner holds no more than it
    # did then. Without the collection it held one more every two steps (Airflow 3.3.2: 4, 6, 4, 6, 8, 5, ... 11).
    ordered = [held[n] for n in sorted(held, key=lambda n: (out.stdout + out.stderr).index(f"step {n} collected"))]
    assert max(ordered[1:]) <= ordered[1] + 1, ordered
