# The reference app (kafka_soak.clients.reference.worker) as an image, for runtime=docker.
#   docker build -f docker/worker.Dockerfile -t kafka-soak-worker:latest .
# BASE_IMAGE: any image with Python 3.11+ and the venv module (python:3.11-slim by default).
# PIP_ARGS: extra pip options; "--no-index" installs only from docker/wheelhouse/ (machines without PyPI).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
ARG PIP_ARGS=""
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=/app
COPY docker/wheelhouse/ /tmp/wheelhouse/
COPY plugins/kafka_soak/__init__.py plugins/kafka_soak/params.py /app/kafka_soak/
COPY plugins/kafka_soak/clients/__init__.py /app/kafka_soak/clients/
COPY plugins/kafka_soak/infra/__init__.py plugins/kafka_soak/infra/kafka_io.py /app/kafka_soak/infra/
COPY plugins/kafka_soak/shared/ /app/kafka_soak/shared/
COPY plugins/kafka_soak/clients/reference/ /app/kafka_soak/clients/reference/
# What the worker imports besides its modules (the same list a worker_versions virtualenv installs)
RUN python3 -m venv /opt/venv \
 && pip install --no-cache-dir --disable-pip-version-check ${PIP_ARGS} --find-links /tmp/wheelhouse \
        -r /app/kafka_soak/clients/reference/requirements.txt \
 && rm -rf /tmp/wheelhouse
RUN useradd --system --no-create-home soak 2>/dev/null || true
USER soak
WORKDIR /app
ENTRYPOINT ["python", "-m", "kafka_soak.clients.reference.worker"]
