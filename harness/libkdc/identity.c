/* kdc_identity(): SHA-256 of an event's original topic, key and value, with
 * OpenSSL's EVP interface. */
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

#include <kdc/dlq.h>
#include <kdc/error.h>

#include "internal.h"

static void be32(unsigned char out[4], uint32_t v) {
        out[0] = (unsigned char)(v >> 24);
        out[1] = (unsigned char)(v >> 16);
        out[2] = (unsigned char)(v >> 8);
        out[3] = (unsigned char)v;
}

/* u8(present) u32be(len) bytes */
static int update_bytes(EVP_MD_CTX *ctx, const void *p, size_t len) {
        unsigned char frame[5];

        frame[0] = p != NULL;
        be32(frame + 1, (uint32_t)len);
        return EVP_DigestUpdate(ctx, frame, sizeof(frame)) &&
               (!len || EVP_DigestUpdate(ctx, p, len));
}

int kdc_identity(const char *topic, const void *key, size_t key_len,
                 const void *value, size_t value_len,
                 unsigned char identity[KDC_IDENTITY_LEN]) {
        static const char tag[] = "kdc.identity.v1"; /* sizeof: with NUL */
        unsigned char tlen[4];
        unsigned int outlen = 0;
        EVP_MD_CTX *ctx;
        size_t topic_len;
        int ok;

        if (!topic || !identity || (!key && key_len) || (!value && value_len))
                return KDC_ERR_INVALID;
        topic_len = strlen(topic);
        if (topic_len > UINT32_MAX || key_len > UINT32_MAX ||
            value_len > UINT32_MAX)
                return KDC_ERR_INVALID;
        ctx = EVP_MD_CTX_new();
        if (!ctx)
                return KDC_ERR_NOMEM;
        be32(tlen, (uint32_t)topic_len);
        ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
             EVP_DigestUpdate(ctx, tag, sizeof(tag)) &&
             EVP_DigestUpdate(ctx, tlen, sizeof(tlen)) &&
             (!topic_len || EVP_DigestUpdate(ctx, topic, topic_len)) &&
             update_bytes(ctx, key, key_len) &&
             update_bytes(ctx, value, value_len) &&
             EVP_DigestFinal_ex(ctx, identity, &outlen) &&
             outlen == KDC_IDENTITY_LEN;
        EVP_MD_CTX_free(ctx);
        return ok ? 0 : KDC_ERR_NOMEM;
}

void kdc__identity_hex(const unsigned char identity[KDC_IDENTITY_LEN],
                       char hex[2 * KDC_IDENTITY_LEN + 1]) {
        static const char digits[] = "0123456789abcdef";

        for (int i = 0; i < KDC_IDENTITY_LEN; i++) {
                hex[2 * i] = digits[identity[i] >> 4];
                hex[2 * i + 1] = digits[identity[i] & 0xf];
        }
        hex[2 * KDC_IDENTITY_LEN] = '\0';
}
