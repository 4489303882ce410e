/*
 * enricher (C++): consumes "clicks", enriches each event and produces it to
 * "clicks.enriched". The producer registers a delivery-report callback, but:
 *   - produce()'s result is dropped (produce-result-ignored);
 *   - the consumer commits right after flush(), without looking at the
 *     delivery reports (commit-before-delivery-report, flush-as-confirmation);
 *   - it commits with commitSync() and no offsets while librdkafka stores
 *     offsets on hand-over (enable.auto.offset.store defaults to true), so the
 *     commit covers events whose enrichment failed (bare-commit).
 */
#include <iostream>
#include <memory>
#include <string>
#include <librdkafka/rdkafkacpp.h>

class DeliveryReport : public RdKafka::DeliveryReportCb {
  public:
    int failed = 0;
    void dr_cb(RdKafka::Message &message) override {
        if (message.err() != RdKafka::ERR_NO_ERROR) {
            failed++;
            std::cerr << "delivery failed: " << message.errstr() << std::endl;
        }
    }
};

static bool enrich(const RdKafka::Message &in, std::string &out) {
    if (in.len() == 0)
        return false;
    out.assign(static_cast<const char *>(in.payload()), in.len());
    out += ",\"enriched\":true";
    return true;
}

int main() {
    std::string err;
    DeliveryReport reports;
    std::unique_ptr<RdKafka::Conf> pconf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    pconf->set("bootstrap.servers", "localhost:9092", err);
    pconf->set("dr_cb", &reports, err);
    std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(pconf.get(), err));

    std::unique_ptr<RdKafka::Conf> cconf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    cconf->set("bootstrap.servers", "localhost:9092", err);
    cconf->set("group.id", "enricher", err);
    cconf->set("enable.auto.commit", "false", err);
    RdKafka::KafkaConsumer *consumer = RdKafka::KafkaConsumer::create(cconf.get(), err);
    if (!producer || !consumer)
        return 1;
    consumer->subscribe({"clicks"}); /* expect: missing-rebalance-callback */
    for (int i = 0; i < 1000; i++) {
        std::unique_ptr<RdKafka::Message> m(consumer->consume(500));
        if (m->err() != RdKafka::ERR_NO_ERROR)
            continue;
        std::string out;
        if (!enrich(*m, out))
            continue; /* skipped, yet covered by the next commitSync() */
        producer->produce("clicks.enriched", RdKafka::Topic::PARTITION_UA, /* expect: produce-result-ignored; ok: produce-without-delivery-callback */
                          RdKafka::Producer::RK_MSG_COPY, const_cast<char *>(out.data()),
                          out.size(), nullptr, 0, 0, nullptr);
        producer->flush(10000); /* expect: flush-as-confirmation */
        consumer->commitSync(); /* expect: bare-commit, commit-before-delivery-report */
    }
    consumer->close();
    delete consumer;
    return reports.failed != 0;
}
