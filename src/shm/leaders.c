/* Leader choice: which node ranks lead a node (leaders.h). */
#include "shm/leaders.h"

void pc_choose_leaders(const int *numa, int node_size, int num_domains, int l, bool numa_spread, int *out)
{
    if (l > node_size) l = node_size;
    if (!numa_spread || num_domains <= 1) {
        for (int j = 0; j < l; j++) out[j] = j;
        return;
    }
    unsigned char used[4096] = {0};
    for (int j = 0; j < l; j++) {
        int domain = j % num_domains, nth = j / num_domains, pick = -1;
        for (int i = 0, seen = 0; i < node_size && i < 4096; i++)
            if (numa[i] == domain && seen++ == nth) {
                pick = i;
                break;
            }
        if (pick < 0 || used[pick])
            for (int i = 0; i < node_size && i < 4096; i++)
                if (!used[i]) {
                    pick = i;
                    break;
                }
        used[pick] = 1;
        out[j] = pick;
    }
}
