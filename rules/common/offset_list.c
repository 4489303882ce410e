#include "offset_list.h"
#include "consumer_common.h"

#include <string.h>

/* rd_kafka_topic_partition_list_add(list, ..), .._set_offset(list, ..), C++
 * list.push_back(TopicPartition::create(..)): kdc_expr_walk callback, arg the list. */
static int fills_list(const kdc_expr_t *e, void *arg) {
    const kdc_offset_list_t *l = arg;
    if (e->kind != KDC_E_CALL || !e->name)
        return 0;
    if (!strncmp(e->name, "rd_kafka_topic_partition_list_", 30) && e->nkids &&
        kdc_root_var(e->kids[0]) == l->list)
        return 1;
    /* kdc_watermark_done(wm, topic, partition, offset, ..): the commit of wm covers it */
    const kdc_api_t *api = kdc_api_lookup(e);
    if (api && (api->roles & KDC_API_MARK_DONE) &&
        kdc_root_var(kdc_api_arg(e, api->list)) == l->list)
        return 1;
    if (e->is_method && e->recv && kdc_root_var(e->recv) == l->list) {
        const char *base = strrchr(e->name, ':');
        base = base ? base + 1 : e->name;
        return !strcmp(base, "push_back") || !strcmp(base, "emplace_back") ||
               !strcmp(base, "insert");
    }
    return 0;
}

int kdc_offset_list_fills(const kdc_offset_list_t *l, const kdc_expr_t *e) {
    return fills_list(e, (void *)l);
}

/* p = rd_kafka_topic_partition_list_add(list, ..) */
static int find_parts(const kdc_expr_t *e, void *arg) {
    kdc_offset_list_t *l = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        kdc_expr_strip(e->kids[0])->kind == KDC_E_REF && kdc_expr_walk(e->kids[1], fills_list, l) &&
        l->nparts < 8)
        l->parts[l->nparts++] = kdc_root_var(e->kids[0]);
    return 0;
}

void kdc_offset_list_init(kdc_offset_list_t *l, const kdc_func_t *f, const kdc_expr_t *list) {
    *l = (kdc_offset_list_t){.list = kdc_root_var(list)};
    if (l->list)
        kdc_func_walk_exprs(f, find_parts, l);
}

int kdc_offset_list_is_lvalue(const kdc_offset_list_t *l, const kdc_expr_t *lhs) {
    const char *v = kdc_root_var(lhs);
    if (v && v == l->list)
        return 1;
    for (size_t i = 0; v && i < l->nparts; i++)
        if (l->parts[i] == v)
            return 1;
    return kdc_expr_walk(lhs, fills_list, (void *)l); /* list_add(list, ..)->offset = .. */
}

/* The messages a call filling the list is given, or whose fields are assigned
 * to a part of it. */
static int find_fill(const kdc_expr_t *e, void *arg) {
    kdc_offset_list_t *l = arg;
    if (fills_list(e, l)) {
        for (unsigned i = 1; i < e->nkids; i++)
            l->nmsgs = kdc_add_message_vars(e->kids[i], l->msgs, l->nmsgs, 8);
        if (e->is_method)
            for (unsigned i = 0; i < e->nkids; i++)
                l->nmsgs = kdc_add_message_vars(e->kids[i], l->msgs, l->nmsgs, 8);
    } else if (e->kind == KDC_E_BINARY &&
               (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMPOUND_ASSIGN) && e->nkids == 2 &&
               kdc_offset_list_is_lvalue(l, e->kids[0])) {
        l->nmsgs = kdc_add_message_vars(e->kids[1], l->msgs, l->nmsgs, 8);
    }
    return 0;
}

size_t kdc_offset_list_messages(const kdc_func_t *f, const kdc_expr_t *list, const char **msgs,
                                size_t max) {
    kdc_offset_list_t l;
    kdc_offset_list_init(&l, f, list);
    if (!l.list)
        return 0;
    kdc_func_walk_exprs(f, find_fill, &l);
    size_t n = l.nmsgs < max ? l.nmsgs : max;
    for (size_t i = 0; i < n; i++)
        msgs[i] = l.msgs[i];
    return n;
}
