/* Shared by the configuration rules: walking producer/consumer clients and
 * their settings. */
#ifndef KDC_RULES_CONFIG_COMMON_H
#define KDC_RULES_CONFIG_COMMON_H

#include "../rule.h"

/* Calls fn for every client object of `type` (0 producers, 1 consumers, -1 any). */
void kdc_config_each_client(kdc_rule_ctx_t *ctx, int type,
                            void (*fn)(kdc_rule_ctx_t *ctx, size_t client, void *arg), void *arg);

/* Location and function of the call that created a client. */
const kdc_loc_t *kdc_config_client_loc(const kdc_rule_ctx_t *ctx, size_t client);
const kdc_func_t *kdc_config_client_func(const kdc_rule_ctx_t *ctx, size_t client);

/* Is the client a producer in a consume-process-produce or DLQ path: it
 * produces, and the program consumes or it produces to a dead-letter queue? */
int kdc_config_in_delivery_path(const kdc_rule_ctx_t *ctx, size_t client);

/* The settings of `key` on the client's configurations, collected (at most 16). */
typedef struct kdc_config_values {
    const kdc_setting_t *v[16];
    size_t n;
    int unknown; /* the configuration cannot be fully seen */
} kdc_config_values_t;
void kdc_config_values(const kdc_rule_ctx_t *ctx, size_t client, const char *key,
                       kdc_config_values_t *out);

/* Is a transactional.id set on a configuration of the client (to any value,
 * one kdc-lint cannot read included, on some path at least)? */
int kdc_config_is_transactional(const kdc_rule_ctx_t *ctx, size_t client);

#endif
