/* The messages an offset list is built from: an rd_kafka_topic_partition_list_t
 * (or a C++ std::vector<RdKafka::TopicPartition *>) filled from the fields of
 * consumed messages, then committed or stored (commit-before-effect,
 * commit-on-failure). */
#ifndef KDC_RULES_OFFSET_LIST_H
#define KDC_RULES_OFFSET_LIST_H

#include "../rule.h"

/* An offset list variable of a function and what fills it. */
typedef struct kdc_offset_list {
    const char *list;     /* the list variable (USR), NULL when the list is no variable */
    const char *parts[8]; /* p = rd_kafka_topic_partition_list_add(list, ..) */
    size_t nparts;
    const char *msgs[8];  /* messages whose fields fill the list */
    size_t nmsgs;
} kdc_offset_list_t;

/* Sets l to the list variable at the root of `list` (an expression of f) with
 * the partitions f adds to it (p = rd_kafka_topic_partition_list_add(list, ..));
 * no messages yet. */
void kdc_offset_list_init(kdc_offset_list_t *l, const kdc_func_t *f, const kdc_expr_t *list);

/* Is e a call that fills the list: rd_kafka_topic_partition_list_add(list, ..),
 * .._set_offset(list, ..) (any rd_kafka_topic_partition_list_* given it), C++
 * list.push_back/emplace_back/insert(..)? */
int kdc_offset_list_fills(const kdc_offset_list_t *l, const kdc_expr_t *e);

/* Is lhs (the left side of an assignment) part of the list: the list, one of
 * its partitions, or list_add(list, ..)->offset? */
int kdc_offset_list_is_lvalue(const kdc_offset_list_t *l, const kdc_expr_t *lhs);

/* Messages whose offsets the list `list` of f is built from (in f): the
 * message variables mentioned by the calls that fill it and by the values
 * assigned to its parts, each once, in the order met; at most min(max, 8).
 * Returns how many were written to msgs; 0 when `list` is no variable. */
size_t kdc_offset_list_messages(const kdc_func_t *f, const kdc_expr_t *list, const char **msgs,
                                size_t max);

#endif
