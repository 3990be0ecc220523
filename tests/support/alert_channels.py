"""Real alert channels on loopback: an SMTP server (aiosmtpd) and an HTTP server standing in for a Slack incoming
webhook. Airflow's notifiers send to them through connections; tests read what arrived."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller

from kafka_soak.backends.docker_kafka import free_port

WEBHOOK_TOKEN = "T0SOAK/B0SOAK/w3bh00k-t0ken-that-must-stay-secret"


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd handler hook
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"


@contextmanager
def smtp_server() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


@contextmanager
def webhook_server() -> Iterator[tuple[list[dict], int]]:
    posts: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            posts.append({"path": self.path, "body": json.loads(self.rfile.read(int(self.headers["Content-Length"])))})
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield posts, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def connections(smtp_port: int, http_port: int) -> dict[str, str]:
    """The suite's two alert channels as Airflow reads connections from the environment."""
    return {
        "AIRFLOW_CONN_SOAK_ALERT_SMTP": json.dumps({
            "conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port,
            "extra": {"disable_ssl": True, "disable_tls": True, "from_email": "kafka-soak@example.test",
                      "to": "oncall@example.test"}}),
        "AIRFLOW_CONN_SOAK_ALERT_SLACK": json.dumps({
            "conn_type": "slackwebhook", "password": f"http://127.0.0.1:{http_port}/services/{WEBHOOK_TOKEN}"}),
    }


def body(message: Message) -> str:
    part = next(p for p in message.walk() if p.get_content_type() == "text/html")
    return part.get_payload(decode=True).decode()
