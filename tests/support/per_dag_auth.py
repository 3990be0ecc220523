"""An auth manager that grants DAGs one by one, as a deployment's does (FAB's per-DAG permissions, Keycloak): Airflow's
SimpleAuthManager, whose roles grant every DAG, with the users of ``SOAK_TEST_DAG_GRANTS`` (JSON: user -> DAG ids)
limited to their DAGs. The API server of ``airflow_stack`` loads it by name (``[core] auth_manager``)."""

from __future__ import annotations

import json
import os
from typing import Any

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

GRANTS_ENV = "SOAK_TEST_DAG_GRANTS"


class PerDagAuthManager(SimpleAuthManager):
    def is_authorized_dag(self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None) -> bool:
        granted = json.loads(os.environ.get(GRANTS_ENV) or "{}").get(user.get_name())
        if granted is not None and details is not None and details.id is not None and details.id not in granted:
            return False
        return super().is_authorized_dag(method=method, user=user, access_entity=access_entity, details=details)
