/* A small (topic, partition) -> value hash map, shared by the assignment
 * epochs and the watermark. */
#include <stdlib.h>
#include <string.h>

#include <kdc/error.h>

#include "internal.h"

uint64_t kdc__partmap_hash(const char *topic, int32_t partition) {
        /* FNV-1a over the topic bytes, then the partition. */
        uint64_t h = 0xcbf29ce484222325ull;

        for (const unsigned char *p = (const unsigned char *)topic; *p; p++)
                h = (h ^ *p) * 0x100000001b3ull;
        for (int i = 0; i < 4; i++)
                h = (h ^ (((uint32_t)partition >> (8 * i)) & 0xff)) *
                    0x100000001b3ull;
        return h ^ (h >> 29);
}

static size_t slot_of(const struct kdc__partmap *m, const char *topic,
                      int32_t partition, uint64_t hash, int *found) {
        size_t mask = m->cap - 1, i = (size_t)hash & mask;

        for (;; i = (i + 1) & mask) {
                const struct kdc__partmap_slot *s = &m->slots[i];

                if (!s->topic) {
                        *found = 0;
                        return i;
                }
                if (s->hash == hash && s->partition == partition &&
                    strcmp(s->topic, topic) == 0) {
                        *found = 1;
                        return i;
                }
        }
}

void *kdc__partmap_get(const struct kdc__partmap *m, const char *topic,
                       int32_t partition, uint64_t hash) {
        int found;
        size_t i;

        if (!m->cap)
                return NULL;
        i = slot_of(m, topic, partition, hash, &found);
        return found ? m->slots[i].value : NULL;
}

static int grow(struct kdc__partmap *m) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct kdc__partmap_slot *old = m->slots, *slots;
        size_t oldcap = m->cap;

        slots = calloc(cap, sizeof(*slots));
        if (!slots)
                return KDC_ERR_NOMEM;
        m->slots = slots;
        m->cap = cap;
        for (size_t i = 0; i < oldcap; i++) {
                int found;
                size_t j;

                if (!old[i].topic)
                        continue;
                j = slot_of(m, old[i].topic, old[i].partition, old[i].hash,
                            &found);
                m->slots[j] = old[i];
        }
        free(old);
        return 0;
}

int kdc__partmap_put(struct kdc__partmap *m, const char *topic,
                     int32_t partition, uint64_t hash, void *value) {
        struct kdc__partmap_slot *s;
        int found = 0;
        size_t i;

        /* Keep the load factor at or below 1/2. */
        if ((m->len + 1) * 2 > m->cap && grow(m))
                return KDC_ERR_NOMEM;
        i = slot_of(m, topic, partition, hash, &found);
        s = &m->slots[i];
        if (!found) {
                s->topic = strdup(topic);
                if (!s->topic)
                        return KDC_ERR_NOMEM;
                s->hash = hash;
                s->partition = partition;
                m->len++;
        }
        s->value = value;
        return 0;
}

void *kdc__partmap_del(struct kdc__partmap *m, const char *topic,
                       int32_t partition, uint64_t hash) {
        size_t mask, i, j;
        void *value;
        int found;

        if (!m->cap)
                return NULL;
        i = slot_of(m, topic, partition, hash, &found);
        if (!found)
                return NULL;
        value = m->slots[i].value;
        free(m->slots[i].topic);
        m->slots[i].topic = NULL;
        m->len--;

        /* Backward-shift: move later members of the probe run into the
         * hole when their home slot is not between the hole and them. */
        mask = m->cap - 1;
        for (j = (i + 1) & mask; m->slots[j].topic; j = (j + 1) & mask) {
                size_t home = (size_t)m->slots[j].hash & mask;

                if (((j - home) & mask) >= ((j - i) & mask)) {
                        m->slots[i] = m->slots[j];
                        m->slots[j].topic = NULL;
                        i = j;
                }
        }
        return value;
}

void kdc__partmap_free(struct kdc__partmap *m) {
        for (size_t i = 0; i < m->cap; i++)
                free(m->slots[i].topic);
        free(m->slots);
        m->slots = NULL;
        m->cap = m->len = 0;
}
