/*
 * Settings the program does not determine: what a client's configurations say
 * about one property, by the one policy every configuration rule follows
 * (facts.h, kdc_facts_client_value; docs/kdc-lint.md, "Settings the program
 * does not determine").
 *
 * Order matters: a setting of the property made after another setting of it
 * (or after settings from outside the program: a name that is not a literal,
 * a configuration handed to code outside the analysis) on every path
 * overrides it. Two settings are ordered in the innermost function both are
 * made from (through the chains of calls that made them): the later one must
 * be on every path from the earlier one to that function's return. A copy's
 * own settings come after those it inherits.
 */
#define _GNU_SOURCE
#include "facts_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int parse_bool(const char *v, int *out) {
    if (!strcasecmp(v, "true") || !strcasecmp(v, "t") || !strcmp(v, "1")) {
        *out = 1;
        return 1;
    }
    if (!strcasecmp(v, "false") || !strcasecmp(v, "f") || !strcmp(v, "0")) {
        *out = 0;
        return 1;
    }
    return 0;
}

/* A value as compared: booleans as "true"/"false" (NULL when not one). */
static const char *canonical(const char *v, int flags) {
    int b;
    if (!v || !(flags & KDC_VALUE_BOOL))
        return v;
    return parse_bool(v, &b) ? (b ? "true" : "false") : NULL;
}

static int same(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* The one name of a property and its alias in librdkafka. */
static const char *property_name(const char *key) {
    static const char *const aliases[][2] = {{"acks", "request.required.acks"},
                                             {"retries", "message.send.max.retries"}};
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(key, aliases[i][1]))
            return aliases[i][0];
    return key;
}

/* The interned property a query's key names; NULL when no setting names it. */
static const char *query_prop(const kdc_facts_t *fx, const char *key) {
    const char *name = property_name(key);
    return fx->props.slots ? kdc_strset_find(&fx->props, name, strlen(name)) : NULL;
}

/* ---------- order ---------- */

static int is_node(void *arg, int n) { return n == *(const int *)arg; }

/* Answers of ordered() kept while every setting is marked: the same two calls
 * of one function order the settings of many properties and configurations
 * (a test's base configuration, then its own settings). */
typedef struct order_memo {
    struct order_entry {
        const kdc_cfg_t *g; /* NULL: free */
        int from, to, ordered;
    } * v;
    size_t n, cap;
} order_memo_t;

static size_t order_slot(const order_memo_t *m, const kdc_cfg_t *g, int from, int to) {
    uint64_t h = ((uint64_t)(uintptr_t)g * 0x9E3779B97F4A7C15u) ^
                 ((uint64_t)(unsigned)from * 0xC2B2AE3D27D4EB4Fu) ^ (uint64_t)(unsigned)to;
    size_t i = (size_t)(h ^ (h >> 29)) & (m->cap - 1);
    while (m->v[i].g && !(m->v[i].g == g && m->v[i].from == from && m->v[i].to == to))
        i = (i + 1) & (m->cap - 1);
    return i;
}

/* Is node `to` on every path from node `from` to g's exit (and reached)? */
static int ordered(order_memo_t *m, const kdc_cfg_t *g, int from, int to) {
    size_t i = 0;
    if (m) {
        if ((m->n + 1) * 2 > m->cap) {
            order_memo_t grown = {NULL, 0, m->cap ? m->cap * 2 : 1024};
            grown.v = calloc(grown.cap, sizeof *grown.v);
            if (!grown.v)
                kdc_oom();
            for (size_t k = 0; k < m->cap; k++)
                if (m->v[k].g)
                    grown.v[order_slot(&grown, m->v[k].g, m->v[k].from, m->v[k].to)] = m->v[k];
            grown.n = m->n;
            free(m->v);
            *m = grown;
        }
        i = order_slot(m, g, from, to);
        if (m->v[i].g)
            return m->v[i].ordered;
    }
    /* (reached at all: a function that never returns reaches no exit) */
    int r = kdc_cfg_reaches_avoiding(g, from, to, NULL, NULL) &&
            !kdc_cfg_reaches_avoiding(g, from, g->exit, is_node, &to);
    if (m) {
        m->v[i] = (struct order_entry){g, from, to, r};
        m->n++;
    }
    return r;
}

/* Does `later` happen after `earlier` on every path? They are ordered where
 * their chains of calls part: in the first function both pass through, or,
 * when both make the same call there (one helper setting from a table), in
 * the function out from it where they call it at different places
 * (apply(conf, defaults); apply(conf, overrides);). */
static int after(const kdc_setting_t *later, const kdc_setting_t *earlier, order_memo_t *memo) {
    if (later->inherited != earlier->inherited)
        return earlier->inherited;
    for (unsigned i = 0; i < earlier->npath; i++)
        for (unsigned j = 0; j < later->npath; j++) {
            if (earlier->pathf[i] != later->pathf[j])
                continue;
            unsigned a = i, b = j; /* where the chains part */
            while (earlier->path[a] == later->path[b]) {
                a++, b++;
                if (a >= earlier->npath || b >= later->npath ||
                    earlier->pathf[a] != later->pathf[b])
                    return 0; /* one call: a loop over pairs, or the same helper call */
            }
            const kdc_func_t *f = earlier->pathf[a];
            if (!f->cfg)
                return 0;
            const kdc_cfg_t *g = f->cfg;
            int from = kdc_cfg_node_of_call(g, earlier->path[a]);
            int to = kdc_cfg_node_of_call(g, later->path[b]);
            if (from < 0 || to < 0)
                return 0;
            return ordered(memo, g, from, to);
        }
    return 0;
}

/* ---------- the index: a configuration's settings by property ---------- */

static const kdc_expr_t *first_call(const kdc_setting_t *s) { return s->npath ? s->path[0] : NULL; }

static int by_prop_cmp(const void *a, const void *b, void *arg) {
    const setting_vec_t *all = arg;
    const kdc_setting_t *x = &all->v[*(const size_t *)a];
    const kdc_setting_t *y = &all->v[*(const size_t *)b];
    if (x->prop != y->prop)
        return (uintptr_t)x->prop < (uintptr_t)y->prop ? -1 : 1;
    if (first_call(x) != first_call(y))
        return (uintptr_t)first_call(x) < (uintptr_t)first_call(y) ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* The settings of prop in the configuration: [*lo, *hi) of oi->by_prop. */
static void prop_range(const objinfo_t *oi, const char *prop, size_t *lo, size_t *hi) {
    size_t a = 0, b = oi->nby_prop;
    while (a < b) { /* first index whose prop is >= prop */
        size_t m = a + (b - a) / 2;
        if ((uintptr_t)oi->settings.v[oi->by_prop[m]].prop < (uintptr_t)prop)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    while (a < oi->nby_prop && oi->settings.v[oi->by_prop[a]].prop == prop)
        a++;
    *hi = a;
}

/* Is s followed on every path by a setting of prop that is made on every path
 * of its own (so s never holds)? Settings of the same chain of calls (one
 * call in a loop over pairs, or the same helper call) do not order each other. */
static int followed_by(const objinfo_t *oi, const kdc_setting_t *s, const char *prop) {
    size_t lo, hi;
    prop_range(oi, prop, &lo, &hi);
    for (size_t k = lo; k < hi; k++) {
        const kdc_setting_t *l = &oi->settings.v[oi->by_prop[k]];
        if (l != s && !l->conditional && after(l, s, NULL))
            return 1;
    }
    return 0;
}

/* Is the setting overridden for the query's property? A setting of a named
 * property has the answer for its own property marked once
 * (kdc__settings_mark_overridden). */
static int overridden(const objinfo_t *oi, const kdc_setting_t *s, const char *prop) {
    if (s->key)
        return s->overridden;
    return prop && followed_by(oi, s, prop);
}

/* ---------- marking every setting at once: the calls each one passes through ---------- */

/* after(l, s) can hold only where the chains of s and l part: in a function
 * both pass through, at different calls. A configuration built by a helper
 * for a whole test suite holds thousands of settings of one property, each
 * made through the same helper call and parting from the others in its own
 * test; comparing every pair of them is what a scan of the property costs.
 * So each level of each setting's chain is indexed by (property, function,
 * call), and s is compared only with the settings that pass through one of
 * its functions at another call. The answer is the scan's: whether some l
 * has after(l, s). */
typedef struct level {
    uintptr_t prop, f, call; /* the property, a function of the chain, its call there */
    uint32_t setting;        /* index in the configuration's settings */
} level_t;

static int level_cmp(const void *a, const void *b) {
    const level_t *x = a, *y = b;
    if (x->prop != y->prop)
        return x->prop < y->prop ? -1 : 1;
    if (x->f != y->f)
        return x->f < y->f ? -1 : 1;
    if (x->call != y->call)
        return x->call < y->call ? -1 : 1;
    return x->setting < y->setting ? -1 : x->setting > y->setting;
}

/* Does a setting of lv[lo, hi) made on every path come after s? */
static int followed_at(const setting_vec_t *all, const level_t *lv, size_t lo, size_t hi,
                       const kdc_setting_t *s, order_memo_t *memo) {
    for (size_t k = lo; k < hi; k++) {
        const kdc_setting_t *l = &all->v[lv[k].setting];
        if (l != s && !l->conditional && l->inherited == s->inherited && after(l, s, memo))
            return 1;
    }
    return 0;
}

/* Marks the settings of one configuration that are followed_by() a setting of
 * their property. */
static void mark_configuration(objinfo_t *oi, order_memo_t *memo) {
    setting_vec_t *all = &oi->settings;
    for (size_t i = 0; i < all->n; i++)
        all->v[i].overridden = 0;
    /* an inherited setting: by any own setting of its property made on every path */
    for (size_t lo = 0, hi; lo < oi->nby_prop; lo = hi) {
        const char *prop = all->v[oi->by_prop[lo]].prop;
        int own = 0;
        for (hi = lo; hi < oi->nby_prop && all->v[oi->by_prop[hi]].prop == prop; hi++) {
            const kdc_setting_t *l = &all->v[oi->by_prop[hi]];
            own |= !l->inherited && !l->conditional;
        }
        for (size_t k = lo; own && k < hi; k++)
            if (all->v[oi->by_prop[k]].inherited)
                all->v[oi->by_prop[k]].overridden = 1;
    }
    /* otherwise: by a setting of the same inheritance that parts from it (a property
     * set once has none) */
    size_t nlv = 0;
    for (size_t k = 0; k < oi->nby_prop; k++)
        nlv += all->v[oi->by_prop[k]].npath;
    if (!nlv)
        return;
    level_t *lv = malloc(nlv * sizeof *lv);
    if (!lv)
        kdc_oom();
    nlv = 0;
    for (size_t lo = 0, hi; lo < oi->nby_prop; lo = hi) {
        const char *prop = all->v[oi->by_prop[lo]].prop;
        for (hi = lo + 1; hi < oi->nby_prop && all->v[oi->by_prop[hi]].prop == prop; hi++)
            ;
        for (size_t k = lo; hi - lo > 1 && k < hi; k++) {
            const kdc_setting_t *s = &all->v[oi->by_prop[k]];
            for (unsigned i = 0; i < s->npath; i++)
                lv[nlv++] = (level_t){(uintptr_t)prop, (uintptr_t)s->pathf[i],
                                      (uintptr_t)s->path[i], (uint32_t)oi->by_prop[k]};
        }
    }
    qsort(lv, nlv, sizeof *lv, level_cmp);
    for (size_t a = 0, b; a < nlv; a = b) { /* [a, b): one property through one function */
        for (b = a + 1; b < nlv && lv[b].prop == lv[a].prop && lv[b].f == lv[a].f; b++)
            ;
        if (lv[a].call == lv[b - 1].call)
            continue; /* all through one call: none parts from another here */
        for (size_t c = a, d; c < b; c = d) { /* [c, d): through one call of it */
            for (d = c + 1; d < b && lv[d].call == lv[c].call; d++)
                ;
            for (size_t k = c; k < d; k++) {
                kdc_setting_t *s = &all->v[lv[k].setting];
                if (!s->overridden &&
                    (followed_at(all, lv, a, c, s, memo) || followed_at(all, lv, d, b, s, memo)))
                    s->overridden = 1;
            }
        }
    }
    free(lv);
}

void kdc__settings_mark_overridden(kdc_facts_t *fx) {
    size_t n = kdc_pts_nobjs(fx->pts);
    order_memo_t memo = {0};
    kdc_strset_init(&fx->props);
    for (size_t c = 0; c < n; c++) {
        objinfo_t *oi = &fx->info[c];
        setting_vec_t *all = &oi->settings;
        if (!all->n)
            continue;
        oi->by_prop = malloc(all->n * sizeof *oi->by_prop);
        if (!oi->by_prop)
            kdc_oom();
        oi->nby_prop = 0;
        for (size_t i = 0; i < all->n; i++) {
            kdc_setting_t *s = &all->v[i];
            const char *name = s->key ? property_name(s->key) : NULL;
            s->prop = name ? kdc_strset_add(&fx->props, name, strlen(name)) : NULL;
            if (s->prop)
                oi->by_prop[oi->nby_prop++] = i;
        }
        qsort_r(oi->by_prop, oi->nby_prop, sizeof *oi->by_prop, by_prop_cmp, all);
        mark_configuration(oi, &memo);
    }
    free(memo.v);
}

/* ---------- one configuration ---------- */

typedef struct conf_value {
    kdc_value_source_t source;
    const char *value;
    const kdc_setting_t *outside;
} conf_value_t;

static void add_set(kdc_value_t *out, const kdc_setting_t *s) {
    for (size_t i = 0; i < out->nset; i++)
        if (out->set[i] == s)
            return;
    if (out->nset < sizeof out->set / sizeof out->set[0])
        out->set[out->nset++] = s;
}

/* The property on one configuration: its own settings (`own`: a global
 * configuration, whose outside settings count) and those of a default topic
 * configuration attached to it (of the property only). */
static void eval_settings(const objinfo_t *oi, int own, const char *prop, const char *dflt,
                          int flags, conf_value_t *cv, kdc_value_t *out) {
    const setting_vec_t *all = &oi->settings;
    for (size_t i = 0; i < all->n; i++) {
        const kdc_setting_t *s = &all->v[i];
        int of_key = s->prop && s->prop == prop;
        if (!of_key && (s->key || !own || cv->outside))
            continue; /* another property; or one more outside setting, which adds nothing */
        if (overridden(oi, s, prop))
            continue;
        const char *lit = of_key ? (s->value ? s->value : s->fallback) : NULL;
        if (!of_key || !s->value) { /* from outside: any name, or this one's value */
            if (cv->source != KDC_VALUE_VARIES)
                cv->source = KDC_VALUE_OUTSIDE;
            if (!cv->outside)
                cv->outside = s;
        }
        if (of_key)
            add_set(out, s);
        if (!lit)
            continue;
        const char *v = canonical(lit, flags);
        if (!v || (s->conditional && !same(v, canonical(dflt, flags))) ||
            (cv->value && !same(cv->value, v))) {
            cv->source = KDC_VALUE_VARIES; /* on some paths only, or set both ways */
            continue;
        }
        cv->value = v;
        if (cv->source == KDC_VALUE_DEFAULT)
            cv->source = KDC_VALUE_SET;
    }
}

/* ---------- the client ---------- */

void kdc_facts_client_value(const kdc_facts_t *fx, size_t client, const char *key,
                            const char *dflt, int flags, kdc_value_t *out) {
    const objinfo_t *ci = &fx->info[client];
    memset(out, 0, sizeof *out);
    out->source = KDC_VALUE_DEFAULT;
    out->value = canonical(dflt, flags);
    if (ci->unknown_conf) {
        out->source = KDC_VALUE_OUTSIDE;
        out->outside = kdc_facts_client_loc(fx, client);
        out->outside_what = "the client's configuration comes from code outside the analysis";
    }
    const char *prop = query_prop(fx, key);
    const char *agg = NULL;
    int n = 0, varies = 0, any_outside = ci->unknown_conf, any_set = 0;
    for (size_t i = kdc_bits_next(&ci->confs, 0); i < ci->confs.nwords * 64;
         i = kdc_bits_next(&ci->confs, i + 1)) {
        if (!kdc_bits_get(&ci->confs, i))
            continue;
        const objinfo_t *conf = &fx->info[i];
        conf_value_t cv = {KDC_VALUE_DEFAULT, NULL, NULL};
        eval_settings(conf, 1, prop, dflt, flags, &cv, out);
        for (size_t t = kdc_bits_next(&conf->linked, 0);
             !(flags & KDC_VALUE_GLOBAL) && t < conf->linked.nwords * 64;
             t = kdc_bits_next(&conf->linked, t + 1))
            if (kdc_bits_get(&conf->linked, t))
                eval_settings(&fx->info[t], 0, prop, dflt, flags, &cv, out);
        if (cv.outside && !out->outside) {
            out->outside = &cv.outside->loc;
            out->outside_what = cv.outside->escape ? "the configuration is handed to code outside "
                                                     "the analysis, which may set anything"
                                : cv.outside->key ? "a value that is not a literal: getenv, a file, "
                                                    "an argument"
                                                  : "a property name that is not a literal: a "
                                                    "file, argv, a user's key=value list";
        }
        const char *v = cv.value ? cv.value : canonical(dflt, flags);
        if (cv.source == KDC_VALUE_VARIES || (n && !same(agg, v)))
            varies = 1;
        agg = v;
        n++;
        any_outside |= cv.source == KDC_VALUE_OUTSIDE;
        any_set |= cv.source == KDC_VALUE_SET;
    }
    if (varies) {
        out->source = KDC_VALUE_VARIES;
        out->value = NULL;
        return;
    }
    if (n)
        out->value = agg;
    out->source = any_outside ? KDC_VALUE_OUTSIDE : any_set ? KDC_VALUE_SET : KDC_VALUE_DEFAULT;
}

const char *kdc_value_note(const kdc_value_t *v, const char *key, char *buf, size_t size) {
    int own = 0; /* a literal of the program's own */
    for (size_t i = 0; i < v->nset; i++)
        own |= v->set[i]->value || v->set[i]->fallback;
    const char *what = v->outside_what ? v->outside_what : "settings from outside the program";
    if (v->source == KDC_VALUE_OUTSIDE)
        snprintf(buf, size, "%s may be set from outside the program here (%s); assumed %s, %s",
                 key, what, v->value ? v->value : "unset",
                 own ? "as the program sets it" : "librdkafka's default");
    else if (v->source == KDC_VALUE_VARIES && v->outside)
        snprintf(buf, size, "%s may also be set from outside the program here (%s)", key, what);
    else if (v->source == KDC_VALUE_VARIES)
        snprintf(buf, size, "%s is set differently on different paths", key);
    else
        snprintf(buf, size, "%s=%s%s", key, v->value ? v->value : "unset",
                 v->source == KDC_VALUE_DEFAULT ? " (librdkafka's default)" : "");
    return buf;
}

kdc_tri_t kdc_facts_client_bool(const kdc_facts_t *fx, size_t client, const char *key, int dflt) {
    kdc_value_t v;
    kdc_facts_client_value(fx, client, key, dflt ? "true" : "false",
                           KDC_VALUE_BOOL | KDC_VALUE_GLOBAL, &v);
    if (v.source == KDC_VALUE_VARIES || !v.value)
        return KDC_TRI_UNKNOWN;
    return !strcmp(v.value, "true") ? KDC_TRI_YES : KDC_TRI_NO;
}

