#include <librdkafka/rdkafka.h>
const char *doc = "// kdc-lint: ignore[bare-commit] in a string";
const char *raw = R"x(/* kdc-lint: ignore[nope] */)x"; char q = '\''; int n = 1'000;
void f(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); } // kdc-lint: ignore legacy code
void g(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); } // kdc-lint: ignore[] legacy code
void h(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); } // kdc-lint: ignore[bare-commit,] x
// kdc-lint: ignored[bare-commit] typo \
   continued
// kdc-lint: ignore-end
// kdc-lint: ignore-begin[bare-commit] never closed
