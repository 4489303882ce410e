/* Uses the installed libkdc; exits 0 only if the calls behave. */
#include <stdio.h>
#include <string.h>

#include <kdc/kdc.h>

int main(void) {
        kdc_tracker_t *t;

        if (kdc_tracker_new(&t) != 0)
                return 1;
        if (kdc_tracker_pending(t) != 0 || kdc_tracker_reset(t) != 0)
                return 2;
        kdc_tracker_destroy(t);
        if (strcmp(kdc_strerror(KDC_ERR_DELIVERY), kdc_strerror(KDC_OK)) == 0)
                return 3;
        if (kdc_produce_confirmed(NULL, "topic", 0, NULL, 0, NULL, 0, 0,
                                  NULL) != KDC_ERR_INVALID)
                return 4;
        /* libcrypto is linked (statically linked consumers pull it in). */
        {
                unsigned char id[KDC_IDENTITY_LEN];

                if (kdc_identity("orders", "k", 1, "v", 1, id) != 0)
                        return 5;
        }
        if (kdc_classify(NULL, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION) !=
            KDC_CLASS_MEMBERSHIP)
                return 6;
        printf("kdc consumer (C) ok, librdkafka %s\n", rd_kafka_version_str());
        return 0;
}
