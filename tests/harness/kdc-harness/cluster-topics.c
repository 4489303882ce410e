/* cluster-topics BOOTSTRAP: the names of every topic on a cluster, one a line
 * (a Metadata request for all topics: it creates none), for
 * tests/harness/kdc-harness/remote.sh. Exit status 0, or 2 when the cluster
 * did not answer in 10 s. */
#include <stdio.h>

#include <librdkafka/rdkafka.h>

int main(int argc, char **argv) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_conf_t *conf;
        rd_kafka_t *rk;
        char err[256];
        int status = 2;

        if (argc != 2) {
                fputs("usage: cluster-topics HOST:PORT[,...]\n", stderr);
                return 2;
        }
        conf = rd_kafka_conf_new();
        if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], err, sizeof err) !=
            RD_KAFKA_CONF_OK) {
                fprintf(stderr, "cluster-topics: %s\n", err);
                rd_kafka_conf_destroy(conf);
                return 2;
        }
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err))) {
                fprintf(stderr, "cluster-topics: %s\n", err);
                return 2;
        }
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, 10000);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
                for (int i = 0; i < md->topic_cnt; i++)
                        printf("%s\n", md->topics[i].topic);
                rd_kafka_metadata_destroy(md);
                status = 0;
        } else {
                fprintf(stderr, "cluster-topics: %s\n", rd_kafka_err2str(e));
        }
        rd_kafka_destroy(rk);
        return status;
}
