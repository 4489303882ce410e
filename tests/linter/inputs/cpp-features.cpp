// C++ kdc-lint must get through (test_cli.c): templates, lambdas, exceptions,
// smart pointers, range-for over std::function. The bare commits in the catch
// block and in the two lambda bodies are reported. The one inside the template
// (a call on a template parameter) is not seen: a known limit, not a crash.
// Compiles with c++ -std=gnu++17 -fsyntax-only.
#include <librdkafka/rdkafkacpp.h>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

template <typename Consumer> void commit_all(Consumer *c) { c->commitSync(); }
template <typename T> struct Box { T v; T get() const { return v; } };

struct Worker {
    std::unique_ptr<RdKafka::KafkaConsumer> consumer;
    void run() {
        auto each = [this](RdKafka::Message *m) {
            if (m->err()) throw std::runtime_error("bad");
            consumer->commitSync();
        };
        try {
            std::unique_ptr<RdKafka::Message> m(consumer->consume(100));
            each(m.get());
        } catch (const std::exception &e) {
            consumer->commitAsync(); // reported
        } catch (...) {
            throw;
        }
        commit_all(consumer.get());
        Box<int> b{1};
        (void)b.get();
    }
};

int main() {
    std::string err;
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    Worker w;
    w.consumer.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
    w.run();
    std::vector<std::function<void()>> fs{[&] { w.consumer->commitSync(); }};
    for (auto &f : fs) f();
    return 0;
}
