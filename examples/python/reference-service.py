#!/usr/bin/python3
"""reference-service.py: examples/reference-service.c's job in Python, on Debian's
python3-confluent-kafka (1.7.0, on the system librdkafka 2.0.2), following the decision record
(seeds/002) rule by rule. kdc-harness runs it like any command and judges it the same way:

    kdc-harness run --all -- /usr/bin/python3 examples/python/reference-service.py

(/usr/bin/python3: a python3 earlier on PATH, such as a pyenv shim, does not see Debian's
packages.) It reads "amount=N" events from $KAFKA_INPUT_TOPIC as a member of $KAFKA_GROUP_ID,
writes "amount=N total=T" with the event's key and "event-id" header to $KAFKA_OUTPUT_TOPIC, and
routes malformed events to $KAFKA_DLQ_TOPIC. How it keeps the contract:

  - rule 4: every produce has its own delivery callback (on_delivery); a batch counts only when
    every callback reported no error, never on flush() == 0;
  - rules 1, 3 and 5: per partition, only the prefix of confirmed events is committed, with
    commit(message=msg) on the last of them (never a bare commit()); a commit that fails is
    tried again, and what a revoked or lost partition held is never committed;
  - rules 2 and 6: a poison event goes to the DLQ with the kdc.* headers of kdc/dlq.h (its
    coordinates and its identity) and counts as done only when that produce is confirmed;
  - rule 2, transient: any other failure (a refused or timed-out output or DLQ record) commits
    nothing past the failed event and halts the service (exit status 3): the offset stays, and
    the orchestrator (here kdc-harness) starts it again;
  - on SIGTERM or SIGINT it finishes its batch, commits what it confirmed and closes its
    consumer, so a redeploy processes nothing twice (scenario sigterm-redeploy);
  - with KDC_HARNESS_SINK=sqlite:PATH or postgresql:CONNINFO (kdc-harness's sink scenarios) a
    well-formed event's effect is its row in the table effects instead of an output record
    (SQLite through the standard sqlite3 module, PostgreSQL through Debian's python3-psycopg2),
    written in autocommit and only when no row names the event, so a replayed event is not
    written twice; the row counts as confirmed once the statement returned. A busy, full,
    refused or unreachable database, or a revoked permission, is transient: nothing past the
    event is committed and the service halts, as above. A row the database rejects by a
    constraint (sqlite3.IntegrityError, SQLSTATE class 23) is a poison event: confirmed in the
    DLQ, then committed.

examples/python/commit-on-any-exception.py is the same job with the audit's first root cause.
"""
import hashlib
import os
import re
import signal
import sqlite3
import struct
import sys
import time

from confluent_kafka import (Consumer, KafkaError, KafkaException, Producer,
                             TIMESTAMP_NOT_AVAILABLE)

BATCH = 256
WAIT_S = 60  # longer than any message.timeout.ms a scenario asks for
COMMIT_RETRY_S = 0.2
EXIT_HALT = 3
SINK_BUSY_S = 0.1  # a locked SQLite database: wait this long, then halt (sqlite3's default: 5 s)
AMOUNT = re.compile(rb"amount=([1-9][0-9]{0,6})")

running = True


def stop(signum, frame):
    global running
    running = False


def log(text):
    print("reference-service.py: " + text, file=sys.stderr, flush=True)


def settings():
    """The client settings kdc-harness passes in the environment (KDC_TESTKIT_ENV_*)."""
    brokers = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not brokers:
        log("set KAFKA_BOOTSTRAP_SERVERS (or run it under kdc-harness)")
        sys.exit(2)
    cfg = {
        "input": os.environ.get("KAFKA_INPUT_TOPIC") or "kdc.input",
        "output": os.environ.get("KAFKA_OUTPUT_TOPIC") or "kdc.output",
        "dlq": os.environ.get("KAFKA_DLQ_TOPIC") or "kdc.dlq",
        "group": os.environ.get("KAFKA_GROUP_ID") or "kdc-service",
        "sink": os.environ.get("KDC_HARNESS_SINK"),
    }
    consumer = {
        "bootstrap.servers": brokers,
        "group.id": cfg["group"],
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
    }
    producer = {"bootstrap.servers": brokers, "enable.idempotence": True, "linger.ms": 5}
    for name, conf, key in (
        ("KAFKA_SESSION_TIMEOUT_MS", consumer, "session.timeout.ms"),
        ("KAFKA_HEARTBEAT_INTERVAL_MS", consumer, "heartbeat.interval.ms"),
        ("KAFKA_MAX_POLL_INTERVAL_MS", consumer, "max.poll.interval.ms"),
        ("KAFKA_MESSAGE_TIMEOUT_MS", producer, "message.timeout.ms"),
    ):
        if os.environ.get(name):
            conf[key] = int(os.environ[name])
    return cfg, consumer, producer


def amount(msg):
    """N of "amount=N" (1..1000000), or None: the event is poison."""
    m = AMOUNT.fullmatch(msg.value() or b"")
    return int(m.group(1)) if m and int(m.group(1)) <= 1000000 else None


def identity(topic, key, value):
    """kdc_identity() (kdc/dlq.h): SHA-256 of the original topic, key and value."""
    h = hashlib.sha256(b"kdc.identity.v1\x00")
    t = topic.encode()
    h.update(struct.pack(">I", len(t)) + t)
    for part in (key, value):
        h.update(struct.pack(">BI", part is not None, len(part or b"")) + (part or b""))
    return h.hexdigest()


def dlq_headers(msg, group, why):
    """The input's headers (any kdc.* one replaced) and the kdc.* envelope of kdc/dlq.h."""
    ts_type, ts = msg.timestamp()
    own = [(k, v) for k, v in (msg.headers() or []) if not k.startswith("kdc.")]
    return own + [
        ("kdc.original.topic", msg.topic()),
        ("kdc.original.partition", str(msg.partition())),
        ("kdc.original.offset", str(msg.offset())),
        ("kdc.original.timestamp", str(ts if ts_type != TIMESTAMP_NOT_AVAILABLE else -1)),
        ("kdc.consumer.group", group),
        ("kdc.failure.class", "poison"),
        ("kdc.failure.error", why),
        ("kdc.retry.count", "0"),
        ("kdc.identity", identity(msg.topic(), msg.key(), msg.value())),
    ]


def event_id(msg):
    """The event's id: its "event-id" header, else its key (text), or None."""
    ids = [v for k, v in (msg.headers() or []) if k == "event-id" and v]
    try:
        return (ids[-1] if ids else msg.key()).decode()
    except (AttributeError, UnicodeDecodeError):
        return None


class Rejected(Exception):
    """The database refused this row (a constraint): a poison event."""


class Unavailable(Exception):
    """The row is not written for now (busy, full, down, refused access): transient."""


class Sink:
    """The database of KDC_HARNESS_SINK, where an event's effect is its row of effects."""

    SQLITE_INSERT = ("INSERT INTO effects(event_id, amount) SELECT :id, :amount "
                     "WHERE NOT EXISTS (SELECT 1 FROM effects WHERE event_id = :id)")
    PG_INSERT = ("INSERT INTO effects(event_id, amount) SELECT %(id)s::text, %(amount)s::bigint "
                 "WHERE NOT EXISTS (SELECT 1 FROM effects WHERE event_id = %(id)s::text)")

    def __init__(self, url):
        self.pg = None
        self.db = None
        if url.startswith("postgresql:"):
            import psycopg2  # Debian's python3-psycopg2

            self.psycopg2 = psycopg2
            self.conninfo = url[len("postgresql:"):]
        elif url.startswith("sqlite:"):
            # isolation_level=None: autocommit, each insert committed when execute() returns
            self.db = sqlite3.connect(url[len("sqlite:"):], timeout=SINK_BUSY_S,
                                      isolation_level=None)
        else:
            log("KDC_HARNESS_SINK=%s: not sqlite:PATH or postgresql:CONNINFO" % url)
            sys.exit(2)

    def write(self, msg, n):
        """The event's row, written once; raises Rejected or Unavailable."""
        row = {"id": event_id(msg), "amount": n}
        if row["id"] is None:
            raise Rejected("no event id")
        if self.db is not None:
            try:
                self.db.execute(self.SQLITE_INSERT, row)
            except sqlite3.IntegrityError as e:  # SQLITE_CONSTRAINT_*: this row
                raise Rejected(e)
            except sqlite3.Error as e:  # SQLITE_BUSY, SQLITE_FULL, ...: the database
                raise Unavailable(e)
            return
        try:
            if self.pg is None or self.pg.closed:  # down, or broken by the server
                self.pg = self.psycopg2.connect(self.conninfo)
                self.pg.autocommit = True
            with self.pg.cursor() as cur:
                cur.execute(self.PG_INSERT, row)
        except self.psycopg2.Error as e:
            if (e.pgcode or "").startswith("23"):  # integrity constraint violation
                raise Rejected(e)
            raise Unavailable(" ".join(str(e).split()))  # refused, terminated, denied, ...


class Service:
    def __init__(self):
        self.cfg, cconf, pconf = settings()
        self.sink = Sink(self.cfg["sink"]) if self.cfg["sink"] else None
        self.producer = Producer(pconf)
        self.consumer = Consumer(cconf)
        self.assigned = set()  # (topic, partition) this member owns now
        self.pending = {}  # (topic, partition) -> last confirmed message, not yet committed
        self.last_try = 0.0

    # -- rebalances: commit what is confirmed before a partition goes, never after
    def on_assign(self, consumer, partitions):
        self.assigned |= {(p.topic, p.partition) for p in partitions}

    def on_revoke(self, consumer, partitions):
        gone = {(p.topic, p.partition) for p in partitions}
        self.commit_pending(only=gone)
        self.forget(gone)

    def on_lost(self, consumer, partitions):
        self.forget({(p.topic, p.partition) for p in partitions})  # the new owner redoes it

    def forget(self, gone):
        self.assigned -= gone
        for tp in gone:
            self.pending.pop(tp, None)

    def commit_pending(self, only=None):
        """commit(message=msg) for each partition's last confirmed message; a failed commit
        stays pending and is tried again (a later commit covers it too)."""
        self.last_try = time.monotonic()
        for tp, msg in list(self.pending.items()):
            if only is not None and tp not in only:
                continue
            try:
                result = self.consumer.commit(message=msg, asynchronous=False)
                if any(p.error for p in result or []):
                    raise KafkaException(next(p.error for p in result if p.error))
            except KafkaException as e:
                log("commit %s [%d] at %d: %s (tried again)" % (tp + (msg.offset() + 1, e)))
                continue
            if self.pending.get(tp) is msg:
                del self.pending[tp]

    # -- one batch: produce every effect, then read every delivery callback
    def process(self, batch):
        outcome = [None] * len(batch)  # None: no report yet; else the delivery error or True

        def reporter(i):
            def on_delivery(err, _msg):
                outcome[i] = err if err is not None else True

            return on_delivery

        failed = None
        for i, msg in enumerate(batch):
            n = amount(msg)
            id_header = [(k, v) for k, v in (msg.headers() or []) if k == "event-id"]
            try:
                if n is not None and self.sink:
                    try:
                        self.sink.write(msg, n)
                        outcome[i] = True
                    except Rejected as e:  # poison: its DLQ record, confirmed, stands for it
                        log("sink refused the row of %s: %s (to the DLQ)" % (msg.key(), e))
                        self.producer.produce(self.cfg["dlq"], key=msg.key(), value=msg.value(),
                                              headers=dlq_headers(msg, self.cfg["group"],
                                                                  "row rejected by the sink"),
                                              on_delivery=reporter(i))
                elif n is not None:
                    total = "%d.%02d" % (n * 125 // 100, n * 125 % 100)
                    self.producer.produce(self.cfg["output"], key=msg.key(),
                                          value=b"amount=%d total=%s" % (n, total.encode()),
                                          headers=id_header[-1:], on_delivery=reporter(i))
                else:
                    self.producer.produce(self.cfg["dlq"], key=msg.key(), value=msg.value(),
                                          headers=dlq_headers(msg, self.cfg["group"],
                                                              "malformed event"),
                                          on_delivery=reporter(i))
            except (KafkaException, BufferError) as e:  # refused locally: nothing enqueued
                failed = "produce of %s refused: %s" % (msg.key(), e)
                break
            except Unavailable as e:  # the row may be written later
                failed = "row of %s not written: %s" % (msg.key(), e)
                break
        # Every report of what was enqueued, also when the batch failed.
        if self.producer.flush(WAIT_S) > 0 and failed is None:
            failed = "deliveries not reported within %d s" % WAIT_S
        # Per partition, the prefix of confirmed events; stop at the first that is not.
        blocked = set()
        for i, msg in enumerate(batch):
            tp = (msg.topic(), msg.partition())
            if tp in blocked:
                continue
            if outcome[i] is not True:
                blocked.add(tp)
                if failed is None:
                    failed = "%s not confirmed: %s" % (msg.key(), outcome[i] or "no report")
                continue
            if tp in self.assigned:
                self.pending[tp] = msg
        self.commit_pending()
        return failed

    def serve(self):
        self.consumer.subscribe([self.cfg["input"]], on_assign=self.on_assign,
                                on_revoke=self.on_revoke, on_lost=self.on_lost)
        status = 0
        while running:
            batch = [m for m in self.consumer.consume(BATCH, 0.1) if not self.skip(m)]
            if batch:
                failed = self.process(batch)
                if failed:
                    log(failed + ": halting, the offset stays")  # transient: halt the job
                    status = EXIT_HALT
                    break
            elif self.pending and time.monotonic() - self.last_try >= COMMIT_RETRY_S:
                self.commit_pending()
        self.commit_pending()
        self.consumer.close()
        self.producer.flush(WAIT_S)
        return status

    def skip(self, msg):
        if msg.error():
            if msg.error().code() != KafkaError._PARTITION_EOF:
                log("consumer: %s" % msg.error())
            return True
        return False


def main():
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return Service().serve()


if __name__ == "__main__":
    sys.exit(main())
