/* The services' libkdc statistics (kdc/stats.h): each start of a service
 * instance is told a file of its own (KDC_HARNESS_STATS) in a directory of
 * the run; after the run the documents found there are summed into one
 * JSON object for the report (counts added, lag_peak the largest). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "internal.h"

int tk_stats_dir_new(char **dirp) {
        const char *tmp = getenv("TMPDIR");
        char *dir;

        *dirp = NULL;
        if (asprintf(&dir, "%s/kdc-harness-stats-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
                return KDC_ERR_NOMEM;
        if (!mkdtemp(dir)) {
                free(dir);
                return KDC_ERR_NOENT;
        }
        *dirp = dir;
        return 0;
}

void tk_stats_path(const char *dir, int instance, int start, char *buf, size_t size) {
        snprintf(buf, size, "%s/instance-%d-start-%d.json", dir, instance, start);
}

/* Fields of a document that are not counts to add. */
static int not_a_count(const char *key) {
        static const char *const skip[] = {"ts", "time", "lag", "lag_peak", "lag_partitions"};

        for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
                if (!strcmp(key, skip[i]))
                        return 1;
        return 0;
}

/* Add doc's integer counts (and its *_by_error objects) into sum. */
static int add_doc(json_t *sum, json_t *doc) {
        const char *key;
        json_t *v;

        json_object_foreach(doc, key, v) {
                json_t *have = json_object_get(sum, key);

                if (json_is_integer(v) && !not_a_count(key)) {
                        json_int_t n =
                            json_integer_value(v) + (have ? json_integer_value(have) : 0);

                        if (json_object_set_new(sum, key, json_integer(n)))
                                return KDC_ERR_NOMEM;
                } else if (json_is_object(v) && strstr(key, "_by_error")) {
                        if (!have) {
                                have = json_object();
                                if (!have || json_object_set_new(sum, key, have))
                                        return KDC_ERR_NOMEM;
                        }
                        if (add_doc(have, v))
                                return KDC_ERR_NOMEM;
                }
        }
        v = json_object_get(doc, "lag_peak");
        if (json_is_integer(v) &&
            json_integer_value(v) > json_integer_value(json_object_get(sum, "lag_peak")))
                return json_object_set_new(sum, "lag_peak", json_incref(v)) ? KDC_ERR_NOMEM : 0;
        return 0;
}

int tk_stats_collect(const char *dir, char **jsonp) {
        json_t *sum = json_pack("{s:i, s:I}", "files", 0, "lag_peak", (json_int_t)-1);
        struct dirent *de;
        int files = 0, rc = 0;
        DIR *d;

        *jsonp = NULL;
        if (!sum)
                return KDC_ERR_NOMEM;
        if (!(d = opendir(dir))) {
                json_decref(sum);
                return 0;
        }
        while (rc == 0 && (de = readdir(d))) {
                size_t len = strlen(de->d_name);
                char path[4096];
                json_t *doc;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                /* A service killed mid-write leaves only its PATH.tmp. */
                if (len > 5 && !strcmp(de->d_name + len - 5, ".json") &&
                    (doc = json_load_file(path, 0, NULL))) {
                        if (json_is_object(doc)) {
                                rc = add_doc(sum, doc);
                                files++;
                        }
                        json_decref(doc);
                }
                unlink(path);
        }
        closedir(d);
        rmdir(dir);
        if (rc == 0 && files > 0 && json_object_set_new(sum, "files", json_integer(files)) == 0)
                *jsonp = json_dumps(sum, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(sum);
        return rc != 0 || (files > 0 && !*jsonp) ? KDC_ERR_NOMEM : 0;
}
