/* Shared by the consumer rules: manual commits, the message a commit is for,
 * message and index variables, batching, function-name words, and the
 * clients a call or helper acts on at teardown (also destroy-without-flush's
 * producers: `type` as kdc_rule_clients). */
#ifndef KDC_RULES_CONSUMER_COMMON_H
#define KDC_RULES_CONSUMER_COMMON_H

#include "../rule.h"

/* Does some commit or offset store of librdkafka act on this consumer (a
 * store through a consumed message's topic handle counts when it is the only
 * consumer)? */
/* The questions rules/common keeps answers to (kdc_facts_client_memo). */
enum {
    KDC_MEMO_COMMITS,        /* kdc_consumer_commits_manually */
    KDC_MEMO_COMMITS_LIBKDC, /* kdc_consumer_commits_manually_or_with_libkdc */
    KDC_MEMO_GROUP,          /* kdc_consumer_is_group */
    KDC_MEMO_CLOSED,         /* teardown-without-close: closed anywhere */
    KDC_MEMO_BATCHES,        /* kdc_consumer_batches */
};
int kdc_consumer_commits_manually(kdc_rule_ctx_t *ctx, size_t client);

/* The same, counting libkdc's commit-by-message helpers (kdc_commit_message,
 * kdc_commit_message_async) as commits too. */
int kdc_consumer_commits_manually_or_with_libkdc(kdc_rule_ctx_t *ctx, size_t client);

/* Are messages of this consumer collected into an array (batched)? */
int kdc_consumer_batches(kdc_rule_ctx_t *ctx, size_t client);

/* The message a commit or store is for (commit_message's message, the
 * message behind offset_store(m->rkt, ..), C++ commitSync(msg)), or NULL for
 * commits by list or without one. */
const kdc_expr_t *kdc_commit_message_of(const kdc_expr_t *call, const kdc_api_t *api);

/* The variable (USR) at the root of an expression (m in m->payload), or NULL. */
const char *kdc_root_var(const kdc_expr_t *e);

/* Does e mention the variable `usr`? */
int kdc_mentions(const kdc_expr_t *e, const char *usr);

/* Clients of kind `type` the call's handle argument may denote; *unknown as
 * kdc_rule_clients. */
void kdc_call_clients(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                      const kdc_api_t *api, int type, kdc_bits_t *clients, int *unknown);

/* Does the call's handle (api: its API entry) denote the client, or a handle
 * that cannot be followed? `type` as kdc_rule_clients. */
int kdc_call_on_client(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                       const kdc_api_t *api, int type, size_t client);

/* Does the call hand the function it calls only handles of other clients (so
 * whatever it does, it does to them)? Arguments typed rd_kafka_t *,
 * RdKafka::Producer * or RdKafka::KafkaConsumer * count; a helper reaching the
 * client through a global or a struct it is given is not excluded. `type` as
 * kdc_rule_clients. */
int kdc_call_only_other_clients(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                                int type, size_t client);

/* The helper of the program (a function with a body and a CFG) the call runs,
 * when it may act on the client; NULL for an API call, a system function, a
 * function not in the program, or a call handed only other clients' handles. */
const kdc_func_t *kdc_call_helper_for_client(kdc_rule_ctx_t *ctx, const kdc_func_t *f,
                                             const kdc_expr_t *call, int type, size_t client);

/* For each call of the helper f elsewhere in the program that may hand it the
 * client (not an API or system call, and not handed only other clients'
 * handles), in program order: at(ctx, caller, client, call). Returns the
 * first result that is not NULL (a teardown helper's caller where the client
 * was used and not flushed or closed before the call), or NULL. */
typedef const kdc_expr_t *(*kdc_helper_call_fn)(kdc_rule_ctx_t *ctx, const kdc_func_t *caller,
                                                size_t client, const kdc_expr_t *call);
const kdc_expr_t *kdc_at_helper_calls(kdc_rule_ctx_t *ctx, const kdc_func_t *f, int type,
                                      size_t client, kdc_helper_call_fn at);

/* Does e denote topic handles only (C++ `delete topic`, rd_kafka_topic_t *)?
 * Destroying one does not destroy its client. */
int kdc_expr_is_topic_handle(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *e);

/* Is the consumer a high-level (group) consumer: subscribed, or polled with
 * rd_kafka_consumer_poll() / C++ KafkaConsumer::consume()? The legacy simple
 * consumer (rd_kafka_consume_start, rd_kafka_consume) is not. */
int kdc_consumer_is_group(kdc_rule_ctx_t *ctx, size_t client);

/* Does the function name (its last `::` component) hold one of `words` as a
 * word, or one of `first` (NULL: none) as its first word? Words are split at
 * '_' and before an upper-case letter, and compared in lower case (at most 63
 * characters of each): log_message, printStats, isValid. */
int kdc_name_has_word(const char *name, const char *const *words, const char *const *first);

/* Is the function name a logging one (a word log, print, printf, trace,
 * debug, dump: log_message, printStats)? Looking at a message is not its effect. */
int kdc_is_logging_name(const char *name);

/* Does the type spelling name a message (rd_kafka_message_t, RdKafka::Message,
 * pointers and references to them)? NULL: no. */
int kdc_type_is_message(const char *type);

/* Adds to vars[0..n) each message variable (rd_kafka_message_t *,
 * RdKafka::Message *) that e mentions and vars does not hold yet, in the
 * order met, while fewer than max are held. Returns the new count. */
size_t kdc_add_message_vars(const kdc_expr_t *e, const char **vars, size_t n, size_t max);

/* Adds to vars[0..n) the variable at the root of the index of each array
 * element e mentions (i in batch[i]: once i moves on, batch[i] is another
 * message), in the order met, while fewer than max are held (a repeat is
 * added again). Returns the new count. */
size_t kdc_add_index_vars(const kdc_expr_t *e, const char **vars, size_t n, size_t max);

/* Variables of f assigned a message consumed from `client` (m = poll(..)); at most max. */
size_t kdc_consumed_vars(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client,
                         const char **vars, size_t max);

/* A call to processing code outside the analysed program: no definition seen,
 * not from a system header, not librdkafka or another known API, not logging. */
int kdc_call_outside_processing(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call);

#endif
