# Airflow (standalone) with kafka-soak's DAGs, plugins and Spark job, for docker/compose.yaml.
# The project is copied in; runs land in /opt/kafka-soak/runs (a bind mount in the compose file).
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/kafka-soak
COPY requirements.txt .
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir -r requirements.txt
ENV PATH=/opt/venv/bin:$PATH \
    AIRFLOW_HOME=/opt/airflow \
    AIRFLOW__CORE__DAGS_FOLDER=/opt/kafka-soak/dags \
    AIRFLOW__CORE__PLUGINS_FOLDER=/opt/kafka-soak/plugins \
    AIRFLOW__CORE__LOAD_EXAMPLES=False \
    PYTHONPATH=/opt/kafka-soak/plugins \
    PYSPARK_PYTHON=/opt/venv/bin/python \
    SPARK_LOCAL_IP=127.0.0.1 \
    SOAK_RUNS_DIR=/opt/kafka-soak/runs
COPY dags/ dags/
COPY plugins/ plugins/
COPY spark_jobs/ spark_jobs/
COPY expectations/ expectations/
EXPOSE 8080
CMD ["airflow", "standalone"]
