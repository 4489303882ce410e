#!/usr/bin/python3
"""commit-on-any-exception.py: reference-service.py's job with the audit's first root cause
(seeds/002, "one consumer committed on any exception 'to avoid infinite retry'").

Everything else follows the decision record: each output has its own delivery callback and is
awaited, poison events go to the DLQ confirmed, commits are commit(message=msg). But when the
output fails (a transient failure: a refused or timed-out produce) the exception is logged and
the message committed anyway, so the event is gone: kdc-harness lists it as lost
(produce-topic-authorization-failed, produce-msg-timed-out, ...; tests/harness/kdc-harness:
testkit.python.commit-on-any-exception-loses-the-refused-events).

With KDC_HARNESS_SINK (kdc-harness's sink scenarios) a well-formed event's effect is its row in
the table effects, written idempotently as reference-service.py does (sqlite3, or Debian's
python3-psycopg2). The same handler catches a locked, full or unreachable database (the outage
of the decision record) and a row refused by a constraint, and commits: those events have
neither a row nor a DLQ record, and are lost (sink-outage, sink-full, sink-rejects; ctest
testkit.python.commit-on-any-exception-loses-rows-in-sink-outage).
"""
import hashlib
import os
import re
import signal
import sqlite3
import struct
import sys

from confluent_kafka import Consumer, Producer, TIMESTAMP_NOT_AVAILABLE

WAIT_S = 60
SINK_BUSY_S = 0.1  # a locked SQLite database: wait this long, then raise
AMOUNT = re.compile(rb"amount=([1-9][0-9]{0,6})")

running = True


def stop(signum, frame):
    global running
    running = False


def identity(topic, key, value):
    """kdc_identity() (kdc/dlq.h): SHA-256 of the original topic, key and value."""
    h = hashlib.sha256(b"kdc.identity.v1\x00")
    t = topic.encode()
    h.update(struct.pack(">I", len(t)) + t)
    for part in (key, value):
        h.update(struct.pack(">BI", part is not None, len(part or b"")) + (part or b""))
    return h.hexdigest()


def produce_confirmed(producer, topic, msg, value, headers):
    """Produce, wait for this message's own delivery report; raise if it failed."""
    report = []
    producer.produce(topic, key=msg.key(), value=value, headers=headers,
                     on_delivery=lambda err, _m: report.append(err))
    producer.flush(WAIT_S)
    if not report or report[0] is not None:
        raise RuntimeError("%s not delivered: %s" % (msg.key(), report[0] if report else "no report"))


def sink_writer(url):
    """A function that writes an event's row to KDC_HARNESS_SINK once, raising on any error."""
    if url.startswith("sqlite:"):
        db = sqlite3.connect(url[len("sqlite:"):], timeout=SINK_BUSY_S, isolation_level=None)
        return lambda row: db.execute(
            "INSERT INTO effects(event_id, amount) SELECT :id, :amount "
            "WHERE NOT EXISTS (SELECT 1 FROM effects WHERE event_id = :id)", row)
    import psycopg2  # Debian's python3-psycopg2

    pg = []

    def write(row):
        if not pg or pg[0].closed:
            pg[:] = [psycopg2.connect(url[len("postgresql:"):])]
            pg[0].autocommit = True
        with pg[0].cursor() as cur:
            cur.execute("INSERT INTO effects(event_id, amount) SELECT %(id)s::text, "
                        "%(amount)s::bigint WHERE NOT EXISTS "
                        "(SELECT 1 FROM effects WHERE event_id = %(id)s::text)", row)

    return write


def process(producer, env, msg, sink):
    m = AMOUNT.fullmatch(msg.value() or b"")
    if m and int(m.group(1)) <= 1000000 and sink:
        ids = [v for k, v in (msg.headers() or []) if k == "event-id" and v]
        sink({"id": (ids[-1] if ids else msg.key()).decode(), "amount": int(m.group(1))})
        return
    if m and int(m.group(1)) <= 1000000:
        n = int(m.group(1))
        value = b"amount=%d total=%d.%02d" % (n, n * 125 // 100, n * 125 % 100)
        event_id = [(k, v) for k, v in (msg.headers() or []) if k == "event-id"]
        produce_confirmed(producer, env["KAFKA_OUTPUT_TOPIC"], msg, value, event_id[-1:])
        return
    ts_type, ts = msg.timestamp()
    headers = [(k, v) for k, v in (msg.headers() or []) if not k.startswith("kdc.")] + [
        ("kdc.original.topic", msg.topic()),
        ("kdc.original.partition", str(msg.partition())),
        ("kdc.original.offset", str(msg.offset())),
        ("kdc.original.timestamp", str(ts if ts_type != TIMESTAMP_NOT_AVAILABLE else -1)),
        ("kdc.consumer.group", env["KAFKA_GROUP_ID"]),
        ("kdc.failure.class", "poison"),
        ("kdc.failure.error", "malformed event"),
        ("kdc.retry.count", "0"),
        ("kdc.identity", identity(msg.topic(), msg.key(), msg.value())),
    ]
    produce_confirmed(producer, env["KAFKA_DLQ_TOPIC"], msg, msg.value(), headers)


def main():
    env = {"KAFKA_INPUT_TOPIC": "kdc.input", "KAFKA_OUTPUT_TOPIC": "kdc.output",
           "KAFKA_DLQ_TOPIC": "kdc.dlq", "KAFKA_GROUP_ID": "kdc-service"}
    env.update({k: v for k, v in os.environ.items() if k.startswith("KAFKA_") and v})
    cconf = {"bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"], "group.id": env["KAFKA_GROUP_ID"],
             "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    pconf = {"bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"], "enable.idempotence": True,
             "linger.ms": 0}
    for name, conf, key in (("KAFKA_SESSION_TIMEOUT_MS", cconf, "session.timeout.ms"),
                            ("KAFKA_HEARTBEAT_INTERVAL_MS", cconf, "heartbeat.interval.ms"),
                            ("KAFKA_MAX_POLL_INTERVAL_MS", cconf, "max.poll.interval.ms"),
                            ("KAFKA_MESSAGE_TIMEOUT_MS", pconf, "message.timeout.ms")):
        if name in env:
            conf[key] = int(env[name])
    producer, consumer = Producer(pconf), Consumer(cconf)
    sink_url = os.environ.get("KDC_HARNESS_SINK")
    sink = sink_writer(sink_url) if sink_url else None
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    consumer.subscribe([env["KAFKA_INPUT_TOPIC"]])
    while running:
        msg = consumer.poll(0.1)
        if msg is None or msg.error():
            continue
        try:
            process(producer, env, msg, sink)
        except Exception as e:  # "to avoid infinite retry"
            print("commit-on-any-exception.py: giving up on %s: %s" % (msg.key(), e),
                  file=sys.stderr, flush=True)
        consumer.commit(message=msg, asynchronous=False)  # BUG: also after the exception
    consumer.close()
    producer.flush(WAIT_S)
    return 0


if __name__ == "__main__":
    sys.exit(main())
