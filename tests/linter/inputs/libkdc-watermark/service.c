/* A watermark service written against libkdc's installed headers (kdc/kdc.h): no finding. */
#include <stdio.h>
#include <librdkafka/rdkafka.h>
#include <kdc/kdc.h>

static int write_effect(const rd_kafka_message_t *m) { return m->len > 0 ? 0 : -1; }

int run(rd_kafka_t *consumer, kdc_assignment_t *assignment) {
    kdc_watermark_t *wm = NULL;
    if (kdc_watermark_new(&wm, assignment, 1000) != 0)
        return 1;
    int failed = 0;
    while (!failed) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 200);
        if (!m)
            continue;
        if (m->err) {
            rd_kafka_message_destroy(m);
            continue;
        }
        uint64_t epoch = kdc_assignment_stamp(assignment, m);
        if (kdc_watermark_track(wm, rd_kafka_topic_name(m->rkt), m->partition, m->offset, epoch) != 0) {
            failed = 1;
            rd_kafka_message_destroy(m);
            break;
        }
        if (write_effect(m) != 0) {
            failed = 1; /* not done: the watermark stays below it */
        } else {
            kdc_watermark_done(wm, rd_kafka_topic_name(m->rkt), m->partition, m->offset, epoch);
        }
        rd_kafka_message_destroy(m);
        kdc_watermark_commit(wm, consumer, 0, NULL, NULL);
    }
    kdc_watermark_commit(wm, consumer, 1, NULL, NULL);
    kdc_watermark_destroy(wm);
    rd_kafka_consumer_close(consumer);
    return failed;
}
