"""An app that joins its group, owns its partitions and never commits: the drain waits on it for as long as it runs.

``stuck_consumer.py BOOTSTRAP GROUP CLIENT_ID TOPIC``. It stops as a well-behaved app does: on SIGTERM it closes its
consumer, which leaves the group at once.
"""

import signal
import sys

from confluent_kafka import Consumer

bootstrap, group, client_id, topic = sys.argv[1:5]
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                     "enable.auto.commit": False})
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # SystemExit between two polls: the finally below closes
try:
    consumer.subscribe([topic])
    while True:
        consumer.poll(0.5)
finally:
    consumer.close()
