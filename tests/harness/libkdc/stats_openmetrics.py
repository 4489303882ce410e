#!/usr/bin/python3
"""libkdc's OpenMetrics text, read by a real parser (Debian's
python3-prometheus-client, prometheus_client.openmetrics.parser), and every
value checked against the JSON document written from the same counts, and
against what stats_openmetrics_dump did (5 delivered, 1 refused by
MSG_SIZE_TOO_LARGE, ...).

    stats_openmetrics.py DUMP_PROGRAM WORKDIR
"""
import json
import os
import subprocess
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

COUNTERS = ["produced", "delivered", "dlq_routed", "dlq_failed", "retries",
            "retries_exhausted", "commits", "rebalances", "revocations", "lost",
            "stale_drops", "txn_aborts", "txn_rewinds", "max_poll_exceeded"]
BY_ERROR = ["delivery_failed", "commits_failed", "consumer_errors"]


def main():
    prog, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    om_path = os.path.join(work, "stats.om")
    json_path = os.path.join(work, "stats.json")
    subprocess.run([prog, om_path, json_path], check=True)
    with open(om_path) as f:
        text = f.read()
    with open(json_path) as f:
        doc = json.load(f)

    # The strict OpenMetrics parser: raises on any syntax error, a missing
    # "# EOF", a counter sample without _total, a clashing name.
    families = {fam.name: fam for fam in text_string_to_metric_families(text)}
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append(f"{what}: {got!r} != {want!r}")

    for name in COUNTERS:
        fam = families.get("kdc_" + name)
        if fam is None:
            failures.append(f"kdc_{name}: missing")
            continue
        check(f"kdc_{name} type", fam.type, "counter")
        check(f"kdc_{name} documented", bool(fam.documentation), True)
        samples = [s for s in fam.samples if s.name == f"kdc_{name}_total"]
        check(f"kdc_{name}_total samples", len(samples), 1)
        if samples:
            check(f"kdc_{name}_total", samples[0].value, doc[name])
    for name in BY_ERROR:
        fam = families.get("kdc_" + name)
        if fam is None:
            failures.append(f"kdc_{name}: missing")
            continue
        check(f"kdc_{name} type", fam.type, "counter")
        got = {s.labels["error"]: s.value for s in fam.samples
               if s.name == f"kdc_{name}_total"}
        check(f"kdc_{name}_total by error", got, doc[name + "_by_error"])
        check(f"kdc_{name} sum", sum(got.values()), doc[name])
    lag = {(s.labels["topic"], s.labels["partition"]): s.value
           for s in families["kdc_consumer_lag"].samples}
    want_lag = {(t, p): v["consumer_lag"]
                for t, tv in doc["topics"].items()
                for p, v in tv["partitions"].items()}
    check("kdc_consumer_lag", lag, want_lag)
    check("kdc_consumer_lag type", families["kdc_consumer_lag"].type, "gauge")
    check("kdc_consumer_lag_peak",
          families["kdc_consumer_lag_peak"].samples[0].value, doc["lag_peak"])

    # What the dump did, independently of the JSON.
    check("delivered", doc["delivered"], 5)
    check("produced", doc["produced"], 6)
    check("delivery_failed_by_error", doc["delivery_failed_by_error"],
          {"MSG_SIZE_TOO_LARGE": 1})
    check("commits_failed_by_error", doc["commits_failed_by_error"],
          {"ILLEGAL_GENERATION": 1})
    check("consumer_errors_by_error", doc["consumer_errors_by_error"],
          {"_MAX_POLL_EXCEEDED": 2, "UNKNOWN_MEMBER_ID": 1})
    check("max_poll_exceeded", doc["max_poll_exceeded"], 2)
    check("lag", list(lag.values()), [4])

    if failures:
        print("\n".join(failures))
        return 1
    print(f"{len(families)} metric families parsed; every value matches the "
          f"JSON document (delivered={doc['delivered']}, lag={doc['lag']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
