/* In-process wisdom: what MEASURE and above learned, so that a second plan of the same problem costs no
 * timing. wisdom_text.c gives it a text form (wisdom/FORMAT.md); src/api/wisdom_io.c moves that text between
 * ranks and files. */
#include <stdlib.h>
#include <string.h>

#include "plancoll_codes.h"
#include "planner/planner.h"

static struct pc_wisdom_entry *entries;
static int count, capacity;

static unsigned rigor_rank(unsigned flags)
{
    if (flags & PLANCOLL_EXHAUSTIVE) return 3;
    if (flags & PLANCOLL_PATIENT) return 2;
    if (flags & PLANCOLL_MEASURE) return 1;
    return 0;
}

bool pc_wisdom_prefer(const struct pc_wisdom_entry *a, const struct pc_wisdom_entry *b)
{
    unsigned ra = rigor_rank(a->rigor), rb = rigor_rank(b->rigor);
    return rb > ra || (rb == ra && b->decided_at >= a->decided_at);
}

int pc_wisdom_store(const struct pc_wisdom_entry *e)
{
    for (int i = 0; i < count; i++)
        if (strcmp(entries[i].key, e->key) == 0) {
            if (pc_wisdom_prefer(&entries[i], e)) entries[i] = *e;
            return PLANCOLL_SUCCESS;
        }
    if (count == capacity) {
        int cap = capacity ? 2 * capacity : 16;
        struct pc_wisdom_entry *grown = realloc(entries, sizeof *grown * (size_t)cap);
        if (!grown) return PLANCOLL_ERR_NOMEM;
        entries = grown;
        capacity = cap;
    }
    entries[count++] = *e;
    return PLANCOLL_SUCCESS;
}

const struct pc_wisdom_entry *pc_wisdom_lookup(const char *key, unsigned rigor)
{
    for (int i = 0; i < count; i++)
        if (strcmp(entries[i].key, key) == 0 &&
            ((rigor & PLANCOLL_WISDOM_ONLY) || rigor_rank(entries[i].rigor) >= rigor_rank(rigor)))
            return &entries[i];
    return NULL;
}

void pc_wisdom_clear(void)
{
    free(entries);
    entries = NULL;
    count = capacity = 0;
}

int pc_wisdom_count(void) { return count; }

const struct pc_wisdom_entry *pc_wisdom_at(int i) { return i >= 0 && i < count ? &entries[i] : NULL; }

void pc_wisdom_adopt(struct pc_wisdom_entry *adopted, int n)
{
    free(entries);
    entries = adopted;
    count = capacity = adopted ? n : 0;
}
