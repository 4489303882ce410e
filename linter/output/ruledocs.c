/* Looking up the embedded rule docs (the table is generated: ruledocs.cmake). */
#include "ruledocs.h"

#include <string.h>

const char *kdc_rule_doc(const char *name) {
    for (size_t i = 0; name && i < kdc_nrule_docs; i++)
        if (!strcmp(kdc_rule_docs[i].name, name))
            return kdc_rule_docs[i].markdown;
    return NULL;
}
