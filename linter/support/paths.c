/* Paths as reports show them (see paths.h). */
#include "paths.h"
#include "util.h"

#include <string.h>
#include <sys/stat.h>

const char *kdc_display_path(const char *cwd, const char *path) {
    if (!path)
        return "<unknown>";
    size_t n = cwd ? strlen(cwd) : 0;
    if (n && !strncmp(path, cwd, n) && path[n] == '/')
        return path + n + 1;
    return path;
}

char *kdc_source_root(const char *cwd) {
    if (!cwd || cwd[0] != '/')
        return kdc_xstrdup(cwd ? cwd : ".");
    char *dir = kdc_xstrdup(cwd);
    for (;;) {
        /* .git is a directory in a clone, a file in a worktree or submodule */
        char *dot_git = kdc_xasprintf("%s/.git", dir[1] ? dir : "");
        struct stat st;
        int found = lstat(dot_git, &st) == 0;
        free(dot_git);
        if (found)
            return dir;
        char *slash = strrchr(dir, '/');
        if (slash == dir) {
            if (!dir[1])
                break;
            dir[1] = 0; /* try / itself */
        } else {
            *slash = 0;
        }
    }
    free(dir);
    return kdc_xstrdup(cwd);
}
