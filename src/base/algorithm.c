/* Looking algorithms up in a table (base/algorithm.h). */
#include "base/algorithm.h"

#include <string.h>

const struct pc_algorithm *pc_algorithm_at(const struct pc_algorithm_table *table, int index)
{
    return index >= 0 && index < table->count ? table->entries[index] : NULL;
}

int pc_algorithm_index(const struct pc_algorithm_table *table, const char *name)
{
    for (int i = 0; i < table->count; i++)
        if (strcmp(table->entries[i]->name, name) == 0) return i;
    return -1;
}

int pc_transpose_strategy_index(const char *name)
{
    if (strcmp(name, "transpose.composite") == 0) return 0;
    if (strcmp(name, "transpose.fused") == 0) return 1;
    return -1;
}
