/* Running kdc-lint and reading its JSON report; see lintrun.h. */
#define _GNU_SOURCE
#include "lintrun.h"
#include "markers.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static char *slurp(FILE *f) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        abort();
    rewind(f);
    char chunk[8192];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, got, mem);
    fclose(mem);
    return buf;
}

static void drop_root(void) {
    if (geteuid() != 0)
        return;
    if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) {
        fprintf(stderr, "dropping root: %s\n", strerror(errno));
        _exit(127);
    }
}

static double since(const struct timespec *t0) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

int kdc_run_ex(const char *cwd, char *const argv[], const kdc_run_opts_t *o, kdc_run_t *r) {
    static const kdc_run_opts_t none = {0};
    if (!o)
        o = &none;
    memset(r, 0, sizeof *r);
    FILE *out = tmpfile(), *err = tmpfile();
    if (!out || !err) {
        if (out)
            fclose(out);
        if (err)
            fclose(err);
        return -1;
    }
    int in[2] = {-1, -1};
    if (o->stdin_pipe && pipe2(in, O_CLOEXEC) != 0) {
        fclose(out);
        fclose(err);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        fclose(out);
        fclose(err);
        return -1;
    }
    if (pid == 0) {
        int ofd = o->stdout_path ? open(o->stdout_path, O_WRONLY) : fileno(out);
        if (ofd < 0 || dup2(ofd, STDOUT_FILENO) < 0 || dup2(fileno(err), STDERR_FILENO) < 0)
            _exit(127);
        if (in[0] >= 0 && dup2(in[0], STDIN_FILENO) < 0)
            _exit(127);
        if (cwd && chdir(cwd) != 0) {
            fprintf(stderr, "chdir %s: %s\n", cwd, strerror(errno));
            _exit(127);
        }
        if (o->as_nobody)
            drop_root();
        execv(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, o->timeout ? WNOHANG : 0);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            fclose(out);
            fclose(err);
            return -1;
        }
        if (o->timeout && since(&t0) >= o->timeout) {
            kill(pid, SIGKILL);
            r->timed_out = 1;
        } else if (o->timeout) {
            struct timespec nap = {0, 10 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
    }
    r->seconds = since(&t0);
    if (in[0] >= 0) {
        close(in[0]);
        close(in[1]);
    }
    if (WIFEXITED(status)) {
        r->exit_code = WEXITSTATUS(status);
    } else {
        r->signaled = 1;
        r->exit_code = 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    }
    r->out = slurp(out);
    r->err = slurp(err);
    fclose(out);
    fclose(err);
    return 0;
}

int kdc_run(const char *cwd, char *const argv[], kdc_run_t *r) {
    return kdc_run_ex(cwd, argv, NULL, r);
}

void kdc_run_free(kdc_run_t *r) {
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

const char *kdc_argv_str(char *const argv[], char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; argv[i] && used < len; i++) {
        int n = snprintf(buf + used, len - used, i ? " %s" : "%s", argv[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

char *kdc_resolve_path(const char *cwd, const char *path) {
    char *joined = NULL;
    if (path[0] == '/' || !cwd) {
        joined = strdup(path);
    } else if (asprintf(&joined, "%s/%s", cwd, path) < 0) {
        joined = NULL;
    }
    if (!joined)
        abort();
    char resolved[PATH_MAX];
    if (realpath(joined, resolved)) {
        free(joined);
        joined = strdup(resolved);
        if (!joined)
            abort();
    }
    return joined;
}

/* Field checks: each returns 0 or -1 with err set. */
static int want_string(json_t *obj, const char *key, const char *where, int nullable,
                       char *err, size_t errlen) {
    json_t *v = json_object_get(obj, key);
    if (v && (json_is_string(v) || (nullable && json_is_null(v))))
        return 0;
    set_err(err, errlen, "%s: \"%s\" missing or not a string%s", where, key,
            nullable ? " or null" : "");
    return -1;
}

static int want_int(json_t *obj, const char *key, const char *where, long long min,
                    char *err, size_t errlen) {
    json_t *v = json_object_get(obj, key);
    if (v && json_is_integer(v) && json_integer_value(v) >= min)
        return 0;
    set_err(err, errlen, "%s: \"%s\" missing or not an integer >= %lld", where, key, min);
    return -1;
}

static int check_related(json_t *rel, const char *where, char *err, size_t errlen) {
    if (!json_is_array(rel)) {
        set_err(err, errlen, "%s: \"related\" missing or not an array", where);
        return -1;
    }
    size_t i;
    json_t *r;
    json_array_foreach(rel, i, r) {
        char w[128];
        snprintf(w, sizeof w, "%s related[%zu]", where, i);
        if (!json_is_object(r)) {
            set_err(err, errlen, "%s: not an object", w);
            return -1;
        }
        if (want_string(r, "file", w, 0, err, errlen) || want_int(r, "line", w, 1, err, errlen) ||
            want_int(r, "column", w, 1, err, errlen) ||
            want_string(r, "message", w, 0, err, errlen))
            return -1;
    }
    return 0;
}

int kdc_report_parse(const char *json_text, const char *cwd, kdc_report_t *rep,
                     char *err, size_t errlen) {
    memset(rep, 0, sizeof *rep);
    json_error_t jerr;
    json_t *doc = json_loads(json_text ? json_text : "", JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        set_err(err, errlen, "stdout is not one JSON document: %s (line %d, column %d)", jerr.text,
                jerr.line, jerr.column);
        return -1;
    }
    int rc = -1;
    if (!json_is_object(doc)) {
        set_err(err, errlen, "top level is not an object");
        goto out;
    }
    json_t *tool = json_object_get(doc, "tool");
    if (!json_is_object(tool) || want_string(tool, "name", "tool", 0, err, errlen) ||
        want_string(tool, "version", "tool", 0, err, errlen)) {
        if (!json_is_object(tool))
            set_err(err, errlen, "\"tool\" missing or not an object");
        goto out;
    }
    if (strcmp(json_string_value(json_object_get(tool, "name")), "kdc-lint") != 0) {
        set_err(err, errlen, "tool.name is \"%s\", not \"kdc-lint\"",
                json_string_value(json_object_get(tool, "name")));
        goto out;
    }
    json_t *findings = json_object_get(doc, "findings");
    json_t *errors = json_object_get(doc, "errors");
    json_t *stats = json_object_get(doc, "stats");
    if (!json_is_array(findings)) {
        set_err(err, errlen, "\"findings\" missing or not an array");
        goto out;
    }
    if (!json_is_array(errors)) {
        set_err(err, errlen, "\"errors\" missing or not an array");
        goto out;
    }
    if (!json_is_object(stats)) {
        set_err(err, errlen, "\"stats\" missing or not an object");
        goto out;
    }
    if (want_int(stats, "translation_units", "stats", 0, err, errlen) ||
        want_int(stats, "incomplete", "stats", 0, err, errlen))
        goto out;
    json_t *secs = json_object_get(stats, "seconds");
    if (!json_is_number(secs) || json_number_value(secs) < 0) {
        set_err(err, errlen, "stats: \"seconds\" missing or not a number >= 0");
        goto out;
    }
    rep->translation_units = json_integer_value(json_object_get(stats, "translation_units"));
    rep->incomplete = json_integer_value(json_object_get(stats, "incomplete"));

    size_t i;
    json_t *e;
    char *etext = NULL;
    size_t etlen = 0;
    FILE *em = open_memstream(&etext, &etlen);
    if (!em)
        abort();
    json_array_foreach(errors, i, e) {
        char w[64];
        snprintf(w, sizeof w, "errors[%zu]", i);
        if (!json_is_object(e)) {
            set_err(err, errlen, "%s: not an object", w);
            fclose(em);
            free(etext);
            goto out;
        }
        if (want_string(e, "file", w, 1, err, errlen) ||
            want_string(e, "message", w, 0, err, errlen)) {
            fclose(em);
            free(etext);
            goto out;
        }
        const char *ef = json_string_value(json_object_get(e, "file"));
        fprintf(em, "%s: %s\n", ef ? ef : "(no file)",
                json_string_value(json_object_get(e, "message")));
    }
    fclose(em);
    rep->nerrors = json_array_size(errors);
    if (rep->nerrors)
        rep->errors_text = etext;
    else
        free(etext);

    rep->findings = calloc(json_array_size(findings) + 1, sizeof *rep->findings);
    if (!rep->findings)
        abort();
    json_t *f;
    json_array_foreach(findings, i, f) {
        char w[64];
        snprintf(w, sizeof w, "findings[%zu]", i);
        if (!json_is_object(f)) {
            set_err(err, errlen, "%s: not an object", w);
            goto out;
        }
        if (want_string(f, "rule", w, 0, err, errlen) ||
            want_string(f, "severity", w, 0, err, errlen) ||
            want_string(f, "message", w, 0, err, errlen) ||
            want_string(f, "file", w, 0, err, errlen) || want_int(f, "line", w, 1, err, errlen) ||
            want_int(f, "column", w, 1, err, errlen) ||
            want_int(f, "end_line", w, 1, err, errlen) ||
            want_int(f, "end_column", w, 1, err, errlen) ||
            want_string(f, "function", w, 1, err, errlen) ||
            check_related(json_object_get(f, "related"), w, err, errlen))
            goto out;
        long long line = json_integer_value(json_object_get(f, "line"));
        long long end_line = json_integer_value(json_object_get(f, "end_line"));
        if (end_line < line) {
            set_err(err, errlen, "%s: end_line %lld < line %lld", w, end_line, line);
            goto out;
        }
        if (!*json_string_value(json_object_get(f, "message"))) {
            set_err(err, errlen, "%s: empty message", w);
            goto out;
        }
        kdc_finding_t *k = &rep->findings[rep->nfindings++];
        k->file = kdc_resolve_path(cwd, json_string_value(json_object_get(f, "file")));
        k->rule = strdup(json_string_value(json_object_get(f, "rule")));
        if (!k->rule)
            abort();
        k->line = (unsigned)line;
    }
    rc = 0;
out:
    json_decref(doc);
    if (rc)
        kdc_report_free(rep);
    return rc;
}

void kdc_report_free(kdc_report_t *rep) {
    for (size_t i = 0; i < rep->nfindings; i++) {
        free(rep->findings[i].file);
        free(rep->findings[i].rule);
    }
    free(rep->findings);
    free(rep->errors_text);
    memset(rep, 0, sizeof *rep);
}

long kdc_list_rules(const char *lint, char ***names, char *err, size_t errlen) {
    char *argv[] = {(char *)lint, "--list-rules", NULL};
    kdc_run_t run;
    *names = NULL;
    if (kdc_run(NULL, argv, &run)) {
        set_err(err, errlen, "could not start %s", lint);
        return -1;
    }
    long n = 0;
    char **v = NULL;
    if (run.exit_code != 0) {
        set_err(err, errlen, "`%s --list-rules` exited %d: %.500s", lint, run.exit_code, run.err);
        goto fail;
    }
    char *save = NULL;
    for (char *line = strtok_r(run.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[--len] = '\0';
        if (!len)
            continue;
        size_t k = 0;
        while (line[k] && !isspace((unsigned char)line[k]))
            k++;
        char *name = strndup(line, k);
        const char *summary = line + k;
        while (isspace((unsigned char)*summary))
            summary++;
        if (!kdc_rule_name_valid(name) || !*summary || k == len) {
            set_err(err, errlen, "--list-rules line \"%s\" is not \"<rule-name> <summary>\"", line);
            free(name);
            goto fail;
        }
        for (long i = 0; i < n; i++) {
            if (!strcmp(v[i], name)) {
                set_err(err, errlen, "--list-rules lists %s twice", name);
                free(name);
                goto fail;
            }
        }
        char **nv = realloc(v, (size_t)(n + 1) * sizeof *nv);
        if (!nv)
            abort();
        v = nv;
        v[n++] = name;
    }
    kdc_run_free(&run);
    *names = v;
    return n;
fail:
    for (long i = 0; i < n; i++)
        free(v[i]);
    free(v);
    kdc_run_free(&run);
    return -1;
}
