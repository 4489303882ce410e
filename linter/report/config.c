#define _GNU_SOURCE
/* .kdc-lint.yaml: loading (libyaml), discovery, effective settings (see config.h). */
#include "config.h"
#include "rule.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define CONFIG_MAX_BYTES ((size_t)1 << 20)
#define KDC_XSTR(x) #x
#define KDC_STR(x) KDC_XSTR(x)

const char *const kdc_role_names[KDC_NROLES + 1] = {
    [KDC_ROLE_PRODUCE] = "produce", [KDC_ROLE_COMMIT] = "commit",
    [KDC_ROLE_CONFIRM] = "confirm", [KDC_ROLE_ACK] = "ack",
    [KDC_ROLE_EFFECT] = "effect",   [KDC_ROLE_CLASSIFIER] = "poison-classifier",
    [KDC_ROLE_CONSUME] = "consume",
};

/* The keys of `functions:`: the roles, and presets. */
static const char *const function_keys[] = {"produce", "commit", "confirm", "ack", "effect",
                                            "poison-classifier", "consume", "presets", NULL};

struct kdc_configs {
    char *cwd;
    kdc_config_t *explicit_cfg; /* --config */
    KDC_VEC(kdc_config_t *) all;
    KDC_VEC(kdc_config_error_t) errors;
    kdc_strset_t dirs;  /* interned directory names */
    kdc_strmap_t by_dir; /* directory → governing configuration, or &no_config */
    kdc_strset_t files;  /* interned file names, as asked for */
    kdc_strmap_t by_file; /* file → governing configuration, or &no_config */
    kdc_realpaths_t real;
};

static kdc_config_t no_config; /* cache marker: no configuration governs this directory */

/* ---------- errors ---------- */

static void add_error(kdc_configs_t *cs, char *where, const char *fmt, va_list ap) {
    kdc_config_error_t e = {where, NULL};
    if (vasprintf(&e.message, fmt, ap) < 0)
        kdc_oom();
    KDC_VEC_PUSH(cs->errors, e);
}

static void file_error(kdc_configs_t *cs, kdc_config_t *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void file_error(kdc_configs_t *cs, kdc_config_t *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add_error(cs, kdc_xstrdup(c->path), fmt, ap);
    va_end(ap);
    c->broken = 1;
}

typedef struct loader {
    kdc_configs_t *cs;
    kdc_config_t *c;
    yaml_document_t *doc;
} loader_t;

static void node_error(loader_t *L, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void node_error(loader_t *L, const yaml_node_t *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add_error(L->cs,
              kdc_xasprintf("%s:%zu:%zu", L->c->path, (n ? n->start_mark.line : 0) + 1,
                            (n ? n->start_mark.column : 0) + 1),
              fmt, ap);
    va_end(ap);
    L->c->broken = 1;
}

/* ---------- YAML values ---------- */

static yaml_node_t *node(loader_t *L, int id) { return yaml_document_get_node(L->doc, id); }

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static int is_plain(const yaml_node_t *n) {
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* YAML 1.1 null: empty, ~, null (plain only). */
static int is_null(const yaml_node_t *n) {
    if (!is_plain(n))
        return 0;
    const char *s = scalar(n);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
           !strcmp(s, "NULL");
}

/* YAML 1.1 booleans (plain only): 1/0 for true/false, -1 for anything else. */
static int bool_value(const yaml_node_t *n) {
    static const char *const yes[] = {"true", "yes", "on", NULL};
    static const char *const no[] = {"false", "no", "off", NULL};
    if (!is_plain(n))
        return -1;
    const char *s = scalar(n);
    for (size_t i = 0; yes[i]; i++) {
        if (!strcasecmp(s, yes[i]))
            return 1;
        if (!strcasecmp(s, no[i]))
            return 0;
    }
    return -1;
}

static const char *kind(const yaml_node_t *n) {
    if (!n)
        return "nothing";
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_SCALAR_NODE:
        if (is_null(n))
            return "null";
        if (bool_value(n) >= 0)
            return "a boolean";
        return "a string";
    default: return "nothing";
    }
}

/* A string scalar without NUL bytes; errors name `what`. */
static const char *get_string(loader_t *L, const yaml_node_t *n, const char *what) {
    if (!n || n->type != YAML_SCALAR_NODE || is_null(n)) {
        node_error(L, n, "%s must be a string, not %s", what, kind(n));
        return NULL;
    }
    if (strlen(scalar(n)) != n->data.scalar.length) {
        node_error(L, n, "%s contains a NUL byte", what);
        return NULL;
    }
    return scalar(n);
}

static int get_bool(loader_t *L, const yaml_node_t *n, const char *what, int *out) {
    int b = n ? bool_value(n) : -1;
    if (b < 0) {
        if (n && n->type == YAML_SCALAR_NODE && !is_null(n))
            node_error(L, n, "%s must be true or false, not '%s'", what, scalar(n));
        else
            node_error(L, n, "%s must be true or false, not %s", what, kind(n));
        return -1;
    }
    *out = b;
    return 0;
}

static void strv_free(char **v) {
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* A list of non-empty strings (null: empty list); NULL-terminated. Returns
 * NULL on errors (reported). `check` may reject an item (returns a message). */
static char **get_strings(loader_t *L, const yaml_node_t *n, const char *what,
                          const char *(*check)(const char *)) {
    char **v = kdc_xrealloc(NULL, sizeof *v);
    size_t k = 0;
    v[0] = NULL;
    if (is_null(n))
        return v;
    if (n->type != YAML_SEQUENCE_NODE) {
        node_error(L, n, "%s must be a list of strings, not %s", what, kind(n));
        free(v);
        return NULL;
    }
    int ok = 1;
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *item = node(L, *it);
        char *label = kdc_xasprintf("%s item %zu", what,
                                    (size_t)(it - n->data.sequence.items.start) + 1);
        const char *s = get_string(L, item, label);
        const char *bad = s && !*s ? "is empty" : s && check ? check(s) : NULL;
        if (bad)
            node_error(L, item, "%s %s", label, bad);
        free(label);
        if (!s || bad) {
            ok = 0;
            continue;
        }
        v = kdc_xrealloc(v, (k + 2) * sizeof *v);
        v[k++] = kdc_xstrdup(s);
        v[k] = NULL;
    }
    if (!ok) {
        strv_free(v);
        return NULL;
    }
    return v;
}

typedef void (*key_fn)(loader_t *L, const yaml_node_t *key, const yaml_node_t *value, void *arg);

/* Visits a mapping's pairs: keys must be strings, once each. `known` (NULL:
 * any key) lists the accepted keys, for the unknown-key message. Null is an
 * empty mapping. `what` prefixes messages (NULL: the top level). */
static void each_pair(loader_t *L, const yaml_node_t *n, const char *what,
                      const char *const *known, key_fn fn, void *arg) {
    if (is_null(n))
        return;
    if (n->type != YAML_MAPPING_NODE) {
        node_error(L, n, "%s must be a mapping, not %s", what, kind(n));
        return;
    }
    yaml_node_pair_t *start = n->data.mapping.pairs.start;
    kdc_strset_t keys;
    kdc_strmap_t first; /* interned key -> its first key node */
    kdc_strset_init(&keys);
    kdc_strmap_init(&first);
    for (yaml_node_pair_t *p = start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(L, p->key), *v = node(L, p->value);
        if (!k || k->type != YAML_SCALAR_NODE) {
            node_error(L, k, "%s%skeys must be strings, not %s", what ? what : "", what ? ": " : "",
                       kind(k));
            continue;
        }
        /* the keys seen in this mapping, hashed: a mapping of 100,000 keys is checked in
         * linear time (a scan of the earlier keys took 54 s) */
        const char *name = kdc_strset_add(&keys, scalar(k), strlen(scalar(k)));
        const yaml_node_t *dup = kdc_strmap_get(&first, name);
        if (!dup)
            kdc_strmap_put(&first, name, k);
        if (dup) {
            node_error(L, k, "%s%sduplicate key '%s' (first at line %zu)", what ? what : "",
                       what ? ": " : "", scalar(k), dup->start_mark.line + 1);
            continue;
        }
        if (known) {
            size_t i = 0;
            while (known[i] && strcmp(known[i], scalar(k)))
                i++;
            if (!known[i]) {
                char *list = NULL;
                size_t len = 0;
                FILE *m = open_memstream(&list, &len);
                for (i = 0; known[i]; i++)
                    fprintf(m, "%s%s", i ? ", " : "", known[i]);
                fclose(m);
                node_error(L, k, "%s%sunknown key '%s' (expected one of: %s)", what ? what : "",
                           what ? ": " : "", scalar(k), list);
                free(list);
                continue;
            }
        }
        fn(L, k, v, arg);
    }
    kdc_strmap_free(&first);
    kdc_strset_free(&keys);
}

/* ---------- the schema ---------- */

static const char *check_glob(const char *s) {
    for (const char *p = s; *p;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 2 && !strncmp(p, "..", 2))
            return "cannot leave the configuration's directory ('..')";
        p += len + (slash != NULL);
    }
    return NULL;
}

static void rule_key(loader_t *L, const yaml_node_t *k, const yaml_node_t *v, void *arg);

static void rule_setting(loader_t *L, const yaml_node_t *k, const yaml_node_t *v, void *arg) {
    size_t r = *(size_t *)arg;
    char *what = kdc_xasprintf("rules: %s: %s", kdc_rules[r]->name, scalar(k));
    if (!strcmp(scalar(k), "enabled")) {
        int b;
        if (!get_bool(L, v, what, &b))
            L->c->rule_enabled[r] = b;
    } else {
        const char *s = get_string(L, v, what);
        int sev = -1;
        for (int i = KDC_SEV_NOTE; s && i <= KDC_SEV_ERROR; i++)
            if (!strcmp(s, kdc_severity_name((kdc_severity_t)i)))
                sev = i;
        if (s && sev < 0)
            node_error(L, v, "%s: '%s' is not one of note, warning, error", what, s);
        if (sev >= 0)
            L->c->rule_severity[r] = sev;
    }
    free(what);
}

static void rule_key(loader_t *L, const yaml_node_t *k, const yaml_node_t *v, void *arg) {
    (void)arg;
    const kdc_rule_t *rule = kdc_rule_find(scalar(k));
    if (!rule) {
        node_error(L, k, "rules: unknown rule '%s' (see kdc-lint --list-rules)", scalar(k));
        return;
    }
    size_t r = 0;
    while (kdc_rules[r] != rule)
        r++;
    if (v && v->type == YAML_MAPPING_NODE) {
        static const char *const keys[] = {"enabled", "severity", NULL};
        char *what = kdc_xasprintf("rules: %s", rule->name);
        each_pair(L, v, what, keys, rule_setting, &r);
        free(what);
        return;
    }
    int b = v ? bool_value(v) : -1;
    if (b >= 0) {
        L->c->rule_enabled[r] = b;
        return;
    }
    if (v && v->type == YAML_SCALAR_NODE && !is_null(v))
        node_error(L, v,
                   "rules: %s must be true, false or a mapping with 'enabled' and 'severity', "
                   "not '%s'",
                   rule->name, scalar(v));
    else
        node_error(L, v,
                   "rules: %s must be true, false or a mapping with 'enabled' and 'severity', "
                   "not %s",
                   rule->name, kind(v));
}

static void dlq_key(loader_t *L, const yaml_node_t *k, const yaml_node_t *v, void *arg) {
    (void)arg;
    const char *key = scalar(k);
    char *what = kdc_xasprintf("dlq: %s", key);
    if (!strcmp(key, "defaults")) {
        int b;
        if (!get_bool(L, v, what, &b))
            L->c->dlq_defaults = b;
    } else {
        char ***dst = !strcmp(key, "topics") ? &L->c->dlq_topics : &L->c->dlq_names;
        char **list = get_strings(L, v, what, NULL);
        if (list) {
            strv_free(*dst);
            *dst = list;
        }
    }
    free(what);
}

static const char *check_ack_return(const char *s) {
    return kdc_ack_spec_valid(s, 0) ? NULL
                                    : "is not FUNCTION=VALUE (a function name pattern, '=', an "
                                      "enumerator's name or an integer)";
}

static const char *check_ack_call(const char *s) {
    return kdc_ack_spec_valid(s, 1) ? NULL
                                    : "is not FUNCTION(VALUE) (a function name pattern and, in "
                                      "parentheses, an enumerator's name or an integer)";
}

static void acknowledge_key(loader_t *L, const yaml_node_t *k, const yaml_node_t *v, void *arg) {
    (void)arg;
    const char *key = scalar(k);
    char *what = kdc_xasprintf("acknowledge: %s", key);
    if (!strcmp(key, "presets")) {
        int b;
        if (!get_bool(L, v, what, &b))
            L->c->ack_presets = b;
    } else {
        int calls = !strcmp(key, "calls");
        char ***dst = calls ? &L->c->ack_calls : &L->c->ack_returns;
        char **list = get_strings(L, v, what, calls ? check_ack_call : check_ack_return);
        if (list) {
            strv_free(*dst);
            *dst = list;
        }
    }
    free(what);
}

static void functions_key(loader_t *L, const yaml_node_t *k, const yaml_node_t *v, void *arg) {
    (void)arg;
    if (!strcmp(scalar(k), "presets")) {
        int b;
        if (!get_bool(L, v, "functions: presets", &b))
            L->c->function_presets = b;
        return;
    }
    for (int r = 0; r < KDC_NROLES; r++)
        if (!strcmp(scalar(k), kdc_role_names[r])) {
            char *what = kdc_xasprintf("functions: %s", kdc_role_names[r]);
            char **list = get_strings(L, v, what, NULL);
            free(what);
            if (list) {
                strv_free(L->c->functions[r]);
                L->c->functions[r] = list;
            }
        }
}

static void top_key(loader_t *L, const yaml_node_t *k, const yaml_node_t *v, void *arg) {
    (void)arg;
    const char *key = scalar(k);
    if (!strcmp(key, "profile")) {
        const char *s = get_string(L, v, "profile");
        if (s && !strcmp(s, "default"))
            L->c->profile = 0;
        else if (s && !strcmp(s, "strict"))
            L->c->profile = 1;
        else if (s)
            node_error(L, v, "profile: '%s' is not one of default, strict", s);
    } else if (!strcmp(key, "report-unused-suppressions")) {
        int b;
        if (!get_bool(L, v, key, &b))
            L->c->report_unused = b;
    } else if (!strcmp(key, "rules")) {
        each_pair(L, v, "rules", NULL, rule_key, NULL);
    } else if (!strcmp(key, "exclude")) {
        char **list = get_strings(L, v, "exclude", check_glob);
        if (list) {
            strv_free(L->c->exclude);
            L->c->exclude = list;
        }
    } else if (!strcmp(key, "dlq")) {
        static const char *const keys[] = {"topics", "names", "defaults", NULL};
        each_pair(L, v, "dlq", keys, dlq_key, NULL);
    } else if (!strcmp(key, "functions")) {
        each_pair(L, v, "functions", function_keys, functions_key, NULL);
    } else if (!strcmp(key, "acknowledge")) {
        static const char *const keys[] = {"returns", "calls", "presets", NULL};
        each_pair(L, v, "acknowledge", keys, acknowledge_key, NULL);
    }
}

static const char *const top_keys[] = {"profile", "rules", "exclude", "dlq", "functions",
                                       "acknowledge", "report-unused-suppressions", NULL};

/* Reads a regular file of at most CONFIG_MAX_BYTES; never blocks on a FIFO. */
static char *read_file(kdc_configs_t *cs, kdc_config_t *c, size_t *len) {
    struct stat st;
    int fd = open(c->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        file_error(cs, c, "cannot read the configuration: %s", strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        file_error(cs, c, "the configuration is not a regular file");
        close(fd);
        return NULL;
    }
    if ((size_t)st.st_size > CONFIG_MAX_BYTES) {
        file_error(cs, c, "the configuration is larger than 1 MiB");
        close(fd);
        return NULL;
    }
    char *buf = kdc_xrealloc(NULL, (size_t)st.st_size + 1);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            file_error(cs, c, "cannot read the configuration: %s", strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (r == 0 || (n += (size_t)r) == (size_t)st.st_size)
            break;
    }
    close(fd);
    buf[n] = 0;
    *len = n;
    return buf;
}

static void yaml_error(kdc_configs_t *cs, kdc_config_t *c, const yaml_parser_t *p) {
    const yaml_mark_t *m = p->problem ? &p->problem_mark : &p->context_mark;
    char *where = kdc_xasprintf("%s:%zu:%zu", c->path, m->line + 1, m->column + 1);
    const char *problem = p->problem ? p->problem : "cannot parse";
    if (p->context)
        KDC_VEC_PUSH(cs->errors, ((kdc_config_error_t){
                                     where, kdc_xasprintf("invalid YAML: %s (%s at line %zu)",
                                                          problem, p->context,
                                                          p->context_mark.line + 1)}));
    else
        KDC_VEC_PUSH(cs->errors,
                     ((kdc_config_error_t){where, kdc_xasprintf("invalid YAML: %s", problem)}));
    c->broken = 1;
}

static kdc_config_t *config_new(const char *path) {
    kdc_config_t *c = calloc(1, sizeof *c);
    if (!c)
        kdc_oom();
    c->path = kdc_xstrdup(path);
    c->dir = kdc_xstrdup(path);
    char *slash = strrchr(c->dir, '/');
    if (slash)
        slash[slash == c->dir] = 0; /* "/x.yaml" → "/" */
    c->profile = c->report_unused = -1;
    c->dlq_defaults = 1;
    c->ack_presets = 1;
    c->function_presets = 1;
    c->rule_enabled = kdc_xrealloc(NULL, (kdc_nrules ? kdc_nrules : 1) * sizeof(int));
    c->rule_severity = kdc_xrealloc(NULL, (kdc_nrules ? kdc_nrules : 1) * sizeof(int));
    for (size_t i = 0; i < kdc_nrules; i++)
        c->rule_enabled[i] = c->rule_severity[i] = -1;
    return c;
}

static void config_free(kdc_config_t *c) {
    if (!c)
        return;
    free(c->path);
    free(c->dir);
    free(c->rule_enabled);
    free(c->rule_severity);
    strv_free(c->exclude);
    strv_free(c->dlq_topics);
    strv_free(c->dlq_names);
    strv_free(c->ack_returns);
    strv_free(c->ack_calls);
    for (int r = 0; r < KDC_NROLES; r++)
        strv_free(c->functions[r]);
    free(c);
}

/* A configuration is a few short lists: these bounds are far above any real one and keep
 * a hostile one (a repository's own .kdc-lint.yaml) from taking minutes. libyaml's loader
 * takes quadratic time in the nesting depth (300,000 levels in 600 KB: 154 s), so the
 * bounds are checked on libyaml's events first, which stop at the first node too many. */
#define CONFIG_MAX_DEPTH 64
#define CONFIG_MAX_NODES 200000

/* 0 when text stays within the bounds (or is not YAML: the loader says why), else -1
 * with the error recorded and c broken. */
static int check_bounds(kdc_configs_t *cs, kdc_config_t *c, const char *text, size_t len) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        kdc_oom();
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    size_t depth = 0, nodes = 0;
    const char *over = NULL;
    yaml_mark_t at = {0, 0, 0};
    for (int done = 0; !done && !over;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&parser, &e))
            break;
        switch (e.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > CONFIG_MAX_DEPTH)
                over = "nested deeper than " KDC_STR(CONFIG_MAX_DEPTH) " levels";
            /* fall through */
        case YAML_SCALAR_EVENT:
        case YAML_ALIAS_EVENT:
            if (!over && ++nodes > CONFIG_MAX_NODES)
                over = "more than " KDC_STR(CONFIG_MAX_NODES) " entries";
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        default:
            break;
        }
        at = e.start_mark;
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&parser);
    if (!over)
        return 0;
    char *where = kdc_xasprintf("%s:%zu:%zu", c->path, at.line + 1, at.column + 1);
    KDC_VEC_PUSH(cs->errors,
                 ((kdc_config_error_t){where, kdc_xasprintf("the configuration is %s; not "
                                                            "read",
                                                            over)}));
    c->broken = 1;
    return -1;
}

static void config_parse(kdc_configs_t *cs, kdc_config_t *c, const char *text, size_t len);

/* Loads the configuration at `path` (absolute); always returns one, broken
 * when anything is wrong (errors recorded). */
static kdc_config_t *config_load(kdc_configs_t *cs, const char *path) {
    kdc_config_t *c = config_new(path);
    KDC_VEC_PUSH(cs->all, c);
    size_t len = 0;
    char *text = read_file(cs, c, &len);
    if (!text)
        return c;
    config_parse(cs, c, text, len);
    free(text);
    return c;
}

const kdc_config_t *kdc_configs_parse(kdc_configs_t *cs, const char *path, const char *text,
                                      size_t len) {
    kdc_config_t *c = config_new(path);
    KDC_VEC_PUSH(cs->all, c);
    if (len <= CONFIG_MAX_BYTES)
        config_parse(cs, c, text, len);
    else
        file_error(cs, c, "the configuration is larger than 1 MiB");
    return c;
}

/* Reads the configuration text[0..len) into c (broken when anything is wrong, errors
 * recorded). */
static void config_parse(kdc_configs_t *cs, kdc_config_t *c, const char *text, size_t len) {
    if (check_bounds(cs, c, text, len))
        return;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        kdc_oom();
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        yaml_error(cs, c, &parser);
    } else {
        loader_t L = {cs, c, &doc};
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (root && !is_null(root)) {
            if (root->type == YAML_MAPPING_NODE)
                each_pair(&L, root, NULL, top_keys, top_key, NULL);
            else
                node_error(&L, root,
                           "a configuration is a mapping of keys (profile, rules, exclude, dlq, "
                           "functions, acknowledge, report-unused-suppressions), not %s",
                           kind(root));
        }
        /* A second document would be ignored silently: say so instead. */
        yaml_document_t more;
        if (root && !c->broken) {
            if (!yaml_parser_load(&parser, &more)) {
                yaml_error(cs, c, &parser);
            } else {
                yaml_node_t *r2 = yaml_document_get_root_node(&more);
                if (r2) {
                    loader_t L2 = {cs, c, &more};
                    node_error(&L2, r2, "more than one YAML document; a configuration is one");
                }
                yaml_document_delete(&more);
            }
        }
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
}

/* ---------- discovery ---------- */

static char *absolute(kdc_realpaths_t *rp, const char *cwd, const char *path) {
    char *real = rp ? kdc_realpath(rp, path) : realpath(path, NULL);
    if (real)
        return real;
    if (path[0] == '/' || !cwd)
        return kdc_xstrdup(path);
    return kdc_xasprintf("%s/%s", cwd, path);
}

kdc_configs_t *kdc_configs_new(const char *explicit_path, const char *cwd) {
    kdc_configs_t *cs = calloc(1, sizeof *cs);
    if (!cs)
        kdc_oom();
    cs->cwd = kdc_xstrdup(cwd ? cwd : "/");
    kdc_strset_init(&cs->dirs);
    kdc_strmap_init(&cs->by_dir);
    kdc_strset_init(&cs->files);
    kdc_strmap_init(&cs->by_file);
    kdc_realpaths_init(&cs->real);
    if (explicit_path) {
        char *abs = absolute(NULL, cs->cwd, explicit_path);
        cs->explicit_cfg = config_load(cs, abs);
        free(abs);
    }
    return cs;
}

void kdc_configs_free(kdc_configs_t *cs) {
    if (!cs)
        return;
    for (size_t i = 0; i < cs->all.n; i++)
        config_free(cs->all.v[i]);
    free(cs->all.v);
    for (size_t i = 0; i < cs->errors.n; i++) {
        free(cs->errors.v[i].where);
        free(cs->errors.v[i].message);
    }
    free(cs->errors.v);
    kdc_strset_free(&cs->dirs);
    kdc_strmap_free(&cs->by_dir);
    kdc_strset_free(&cs->files);
    kdc_strmap_free(&cs->by_file);
    kdc_realpaths_free(&cs->real);
    free(cs->cwd);
    free(cs);
}

const kdc_config_t *kdc_configs_for(kdc_configs_t *cs, const char *file) {
    if (cs->explicit_cfg)
        return cs->explicit_cfg;
    if (!file)
        return NULL;
    /* each file is resolved once per run: a file is asked for by every pass over the
     * analysed files and for every finding in it */
    const char *fkey = kdc_strset_add(&cs->files, file, strlen(file));
    kdc_config_t *known = kdc_strmap_get(&cs->by_file, fkey);
    if (known)
        return known == &no_config ? NULL : known;
    char *dir = absolute(&cs->real, cs->cwd, file);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        char *slash = strrchr(dir, '/');
        if (slash)
            slash[slash == dir] = 0;
    }
    /* Walk up to the first directory with a configuration (or a cached answer). */
    KDC_VEC(const char *) visited = {0};
    kdc_config_t *found = NULL;
    for (;;) {
        const char *key = kdc_strset_add(&cs->dirs, dir, strlen(dir));
        found = kdc_strmap_get(&cs->by_dir, key);
        if (found)
            break;
        KDC_VEC_PUSH(visited, key);
        char *candidate = kdc_xasprintf("%s/%s", strcmp(dir, "/") ? dir : "", KDC_CONFIG_NAME);
        int exists = stat(candidate, &st) == 0 || (errno != ENOENT && errno != ENOTDIR &&
                                                   errno != EACCES);
        if (exists)
            found = config_load(cs, candidate);
        free(candidate);
        if (found)
            break;
        if (!strcmp(dir, "/") || !strchr(dir, '/')) {
            found = &no_config;
            break;
        }
        char *slash = strrchr(dir, '/');
        slash[slash == dir] = 0;
    }
    for (size_t i = 0; i < visited.n; i++)
        kdc_strmap_put(&cs->by_dir, visited.v[i], found);
    kdc_strmap_put(&cs->by_file, fkey, found);
    free(visited.v);
    free(dir);
    return found == &no_config ? NULL : found;
}

size_t kdc_configs_nerrors(const kdc_configs_t *cs) { return cs->errors.n; }
const kdc_config_error_t *kdc_configs_error(const kdc_configs_t *cs, size_t i) {
    return &cs->errors.v[i];
}
size_t kdc_configs_count(const kdc_configs_t *cs) { return cs->all.n; }
const kdc_config_t *kdc_configs_get(const kdc_configs_t *cs, size_t i) { return cs->all.v[i]; }

/* ---------- effective settings ---------- */

int kdc_config_strict(const kdc_config_t *c, const kdc_overrides_t *o) {
    if (o && o->profile >= 0)
        return o->profile;
    return c && c->profile >= 0 ? c->profile : 0;
}

int kdc_config_rule_on(const kdc_config_t *c, const kdc_overrides_t *o, size_t rule) {
    if (o && o->rule_on && o->rule_on[rule] >= 0)
        return o->rule_on[rule];
    if (c && c->rule_enabled[rule] >= 0)
        return c->rule_enabled[rule];
    return kdc_config_strict(c, o) || kdc_rules[rule]->in_default;
}

kdc_severity_t kdc_config_severity(const kdc_config_t *c, size_t rule) {
    if (c && c->rule_severity[rule] >= 0)
        return (kdc_severity_t)c->rule_severity[rule];
    return kdc_rules[rule]->severity;
}

int kdc_config_report_unused(const kdc_config_t *c, const kdc_overrides_t *o) {
    if (o && o->report_unused)
        return 1;
    if (c && c->report_unused >= 0)
        return c->report_unused;
    return kdc_config_strict(c, o);
}

/* ---------- exclude globs ---------- */

/* Splits at '/' (in place), dropping empty and "." components; merges "**" runs. */
static size_t split(char *s, char **out, size_t max) {
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(s, "/", &save); t && n < max;
         t = strtok_r(NULL, "/", &save)) {
        if (!strcmp(t, ".") || (!strcmp(t, "**") && n && !strcmp(out[n - 1], "**")))
            continue;
        out[n++] = t;
    }
    return n;
}

#define MAX_COMPONENTS 256

static int glob_matches(const char *pattern, const char *rel) {
    char *pc = kdc_xstrdup(pattern), *sc = kdc_xstrdup(rel);
    char *p[MAX_COMPONENTS + 1], *s[MAX_COMPONENTS];
    for (size_t n = strlen(pc); n > 1 && pc[n - 1] == '/';)
        pc[--n] = 0; /* "vendor/" is "vendor" */
    size_t np = 0;
    if (!strchr(pc, '/'))
        p[np++] = "**"; /* "name": a component at any depth */
    np += split(pc, p + np, MAX_COMPONENTS);
    size_t ns = split(sc, s, MAX_COMPONENTS);
    /* reach[j]: pattern components p[0..i) match path components s[0..j), for i = 0, 1, ..
     * in turn. '**' matches any number of components (consecutive ones were merged): one
     * pass over the path per pattern component, and fnmatch once per component pair at
     * most. A backtracking match took exponential time: twelve "a/" components, each
     * after a '**', against a deep path ran for minutes. */
    unsigned char reach[MAX_COMPONENTS + 1], next[MAX_COMPONENTS + 1];
    memset(reach, 0, sizeof reach);
    reach[0] = 1;
    for (size_t i = 0; i < np; i++) {
        memset(next, 0, sizeof next);
        if (!strcmp(p[i], "**")) {
            for (size_t j = 0, any = 0; j <= ns; j++)
                next[j] = (unsigned char)(any |= reach[j]);
        } else {
            for (size_t j = 0; j < ns; j++)
                next[j + 1] = reach[j] && fnmatch(p[i], s[j], 0) == 0;
        }
        memcpy(reach, next, sizeof reach);
    }
    /* a pattern that matches a directory matches everything below it */
    int hit = 0;
    for (size_t k = 1; k <= ns && !hit; k++)
        hit = reach[k];
    free(pc);
    free(sc);
    return hit;
}

int kdc_config_excludes(const kdc_config_t *c, const char *file) {
    if (!c || !c->exclude || !file)
        return 0;
    size_t n = strlen(c->dir);
    const char *rel = file;
    if (!strcmp(c->dir, "/"))
        rel = file + 1;
    else if (!strncmp(file, c->dir, n) && file[n] == '/')
        rel = file + n + 1;
    for (size_t i = 0; c->exclude[i]; i++)
        if (glob_matches(c->exclude[i], rel))
            return 1;
    return 0;
}

/* ---------- the union for facts ---------- */

static const char **union_list(const kdc_config_t *const *cfgs, size_t n, size_t which,
                               const char *const *defaults) {
    KDC_VEC(const char *) v = {0};
    kdc_strset_t seen; /* the patterns taken, each once (a set: lists may be long) */
    kdc_strset_init(&seen);
    for (size_t pass = 0; pass < n + 1; pass++) {
        const char *const *src;
        if (pass == n)
            src = (const char *const *)defaults;
        else if (cfgs[pass]->broken)
            continue;
        else if (which == 0)
            src = (const char *const *)cfgs[pass]->dlq_topics;
        else if (which == 1)
            src = (const char *const *)cfgs[pass]->dlq_names;
        else if (which == 2 + KDC_NROLES)
            src = (const char *const *)cfgs[pass]->ack_returns;
        else if (which == 3 + KDC_NROLES)
            src = (const char *const *)cfgs[pass]->ack_calls;
        else
            src = (const char *const *)cfgs[pass]->functions[which - 2];
        for (size_t i = 0; src && src[i]; i++) {
            size_t before = seen.n;
            kdc_strset_add(&seen, src[i], strlen(src[i]));
            if (seen.n != before)
                KDC_VEC_PUSH(v, src[i]);
        }
    }
    kdc_strset_free(&seen);
    KDC_VEC_PUSH(v, NULL);
    return v.v;
}

void kdc_options_union(const kdc_config_t *const *cfgs, size_t n, int unconfigured,
                       kdc_options_t *opts, kdc_options_union_t *u) {
    memset(u, 0, sizeof *u);
    int defaults = unconfigured;
    for (size_t i = 0; i < n; i++)
        defaults |= cfgs[i]->broken || cfgs[i]->dlq_defaults;
    u->lists[0] = union_list(cfgs, n, 0, defaults ? kdc_default_dlq_topic_patterns : NULL);
    u->lists[1] = union_list(cfgs, n, 1, defaults ? kdc_default_dlq_name_patterns : NULL);
    opts->dlq_topic_patterns = u->lists[0];
    opts->dlq_name_patterns = u->lists[1];
    /* the wrapper-library presets (cppkafka), unless every file's configuration
     * turns them off */
    int fpresets = unconfigured;
    for (size_t i = 0; i < n; i++)
        fpresets |= cfgs[i]->broken || cfgs[i]->function_presets;
    for (int r = 0; r < KDC_NROLES; r++) {
        u->lists[2 + r] =
            union_list(cfgs, n, 2 + (size_t)r, fpresets ? kdc_function_presets[r] : NULL);
        opts->functions[r] = u->lists[2 + r][0] ? u->lists[2 + r] : NULL;
    }
    /* the acknowledgement presets, unless every file's configuration turns them off */
    int presets = unconfigured;
    for (size_t i = 0; i < n; i++)
        presets |= cfgs[i]->broken || cfgs[i]->ack_presets;
    u->lists[2 + KDC_NROLES] =
        union_list(cfgs, n, 2 + KDC_NROLES, presets ? kdc_ack_presets_returns : NULL);
    u->lists[3 + KDC_NROLES] =
        union_list(cfgs, n, 3 + KDC_NROLES, presets ? kdc_ack_presets_calls : NULL);
    opts->ack_returns = u->lists[2 + KDC_NROLES];
    opts->ack_calls = u->lists[3 + KDC_NROLES];
}

void kdc_options_union_free(kdc_options_union_t *u) {
    for (size_t i = 0; i < sizeof u->lists / sizeof u->lists[0]; i++)
        free(u->lists[i]);
    memset(u, 0, sizeof *u);
}

/* ---------- --dump-config ---------- */

static const char *shown(const char *cwd, const char *path) {
    size_t n = cwd ? strlen(cwd) : 0;
    if (n && !strncmp(path, cwd, n) && path[n] == '/')
        return path + n + 1;
    return path;
}

static json_t *strings(const char *const *v) {
    json_t *a = json_array();
    for (size_t i = 0; v && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

int kdc_config_dump(FILE *out, const char *path, const kdc_config_t *c, const kdc_overrides_t *o,
                    const char *cwd) {
    char *abs = absolute(NULL, cwd, path);
    json_t *root = json_object();
    json_object_set_new(root, "path", json_string(path));
    json_object_set_new(root, "configuration", c ? json_string(shown(cwd, c->path)) : json_null());
    json_object_set_new(root, "excluded", json_boolean(kdc_config_excludes(c, abs)));
    json_object_set_new(root, "profile",
                        json_string(kdc_config_strict(c, o) ? "strict" : "default"));
    json_object_set_new(root, "report-unused-suppressions",
                        json_boolean(kdc_config_report_unused(c, o)));
    json_t *rules = json_object();
    for (size_t i = 0; i < kdc_nrules; i++)
        json_object_set_new(rules, kdc_rules[i]->name,
                            json_pack("{s:b, s:s}", "enabled", kdc_config_rule_on(c, o, i),
                                      "severity", kdc_severity_name(kdc_config_severity(c, i))));
    json_object_set_new(root, "rules", rules);
    json_object_set_new(root, "exclude", strings(c ? (const char *const *)c->exclude : NULL));
    kdc_options_t opts = {0};
    kdc_options_union_t u;
    kdc_options_union(&c, c ? 1 : 0, !c, &opts, &u);
    json_object_set_new(root, "dlq",
                        json_pack("{s:o, s:o, s:b}", "topics", strings(opts.dlq_topic_patterns),
                                  "names", strings(opts.dlq_name_patterns), "defaults",
                                  !c || c->dlq_defaults));
    json_t *fns = json_object();
    for (int r = 0; r < KDC_NROLES; r++)
        json_object_set_new(fns, kdc_role_names[r], strings(opts.functions[r]));
    json_object_set_new(fns, "presets", json_boolean(!c || c->function_presets));
    json_object_set_new(root, "functions", fns);
    json_object_set_new(root, "acknowledge",
                        json_pack("{s:o, s:o, s:b}", "returns", strings(opts.ack_returns), "calls",
                                  strings(opts.ack_calls), "presets", !c || c->ack_presets));
    kdc_options_union_free(&u);
    free(abs);
    int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', out);
    json_decref(root);
    return rc == 0 && !ferror(out) ? 0 : -1;
}
