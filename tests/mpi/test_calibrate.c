/* Calibration (the one program that runs with PLANCOLL_CALIBRATE on): the first unforced plan on a layout
 * measures the machine once, every rank ends with the same model text, a second plan of the same layout
 * reuses it, the figures are plausible (positive; a 2 MiB transfer costs more than an 8 B one), and plans
 * chosen under the calibrated model compute the right results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handles.h"
#include "base/model.h"
#include "base/stream_copy.h" /* PC_STREAM_STORES */
#include "shm/layout.h"       /* the layout's node sizes */
#include "testlib.h"

static uint64_t text_hash(const struct pc_machine_model *m)
{
    char *text = NULL;
    size_t len = 0, cap = 0;
    uint64_t h = 1469598103934665603ull;
    if (pc_model_format(m, &text, &len, &cap) != 0) return 0;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
    free(text);
    return h;
}

static void check_alltoall(MPI_Comm comm, int count, unsigned flags)
{
    int r, P;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &P);
    int *in = malloc(sizeof(int) * (size_t)count * P), *out = malloc(sizeof(int) * (size_t)count * P);
    for (int d = 0; d < P; d++)
        for (int i = 0; i < count; i++) in[d * count + i] = r * 1000003 + d * 1009 + i;
    plancoll_plan p;
    TL_OK(plancoll_plan_alltoall(in, count, MPI_INT, out, count, MPI_INT, comm, flags, &p));
    for (int rep = 0; rep < 3; rep++) {
        memset(out, 0xff, sizeof(int) * (size_t)count * P);
        TL_OK(plancoll_execute(p));
        for (int s = 0; s < P; s++)
            for (int i = 0; i < count; i++)
                TL_CHECK(out[s * count + i] == s * 1000003 + r * 1009 + i, "alltoall count %d from %d item %d", count, s, i);
    }
    plancoll_destroy_plan(&p);
    free(in);
    free(out);
}

static void check_allreduce(MPI_Comm comm, int count, unsigned flags)
{
    int r, P;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &P);
    long *in = malloc(sizeof(long) * (size_t)count), *out = malloc(sizeof(long) * (size_t)count);
    for (int i = 0; i < count; i++) in[i] = (long)r * 7 + i;
    plancoll_plan p;
    TL_OK(plancoll_plan_allreduce(in, out, count, MPI_LONG, MPI_SUM, comm, flags, &p));
    for (int rep = 0; rep < 3; rep++) {
        TL_OK(plancoll_execute(p));
        for (int i = 0; i < count; i++)
            TL_CHECK(out[i] == 7L * P * (P - 1) / 2 + (long)P * i, "allreduce count %d item %d", count, i);
    }
    plancoll_destroy_plan(&p);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    setenv("PLANCOLL_CALIBRATE", "1", 1);
    tl_init(&argc, &argv, "calibrate");
    MPI_Comm comm = MPI_COMM_WORLD;

    double t0 = MPI_Wtime();
    check_alltoall(comm, 64, PLANCOLL_ESTIMATE);
    double first = MPI_Wtime() - t0;

    plancoll_plan probe;
    int dummy[1] = {0}, sink[1];
    TL_OK(plancoll_plan_allreduce(dummy, sink, 1, MPI_INT, MPI_SUM, comm, PLANCOLL_ESTIMATE, &probe));
    char shape[64];
    const struct pc_shape probe_shape = pc_plan_lookup(probe)->prob.shape;
    const int node0 = pc_plan_lookup(probe)->layout->node_sizes[0]; /* where calibration times node messages */
    pc_model_shape_key(&probe_shape, shape, sizeof shape);
    plancoll_destroy_plan(&probe);
    const struct pc_machine_model *m = pc_model_lookup(shape);
    if (tl_size > 1) {
        TL_CHECK(m != NULL, "no model remembered for %s after an unforced plan", shape);
    }
    if (m) {
        TL_CHECK(m->calibrated, "the remembered model is not marked calibrated");
        TL_CHECK(m->calibration_seconds > 0 && m->calibration_seconds < 30, "calibration took %.2f s", m->calibration_seconds);
        uint64_t h = text_hash(m), mx, mn;
        tl_allreduce(&h, &mx, 1, MPI_UINT64_T, MPI_MAX, comm);
        tl_allreduce(&h, &mn, 1, MPI_UINT64_T, MPI_MIN, comm);
        TL_CHECK(mx == mn && h != 0, "ranks hold different model texts");
        TL_CHECK(m->shm_taus >= 1, "no tau-Lop levels");
        for (int n = 0; n < 2; n++)
            for (int t = 0; t < m->shm_taus; t++)
                for (int s = 0; s < PC_MODEL_NSIZES; s++)
                    TL_CHECK(m->shm_time[n][t][s] > 0, "shm_time[%d][%d][%d] = %g", n, t, s, m->shm_time[n][t][s]);
        TL_CHECK(m->shm_time[0][0][PC_MODEL_NSIZES - 1] > m->shm_time[0][0][0], "a 2 MiB copy no slower than 8 B");
        /* the 2-copy handoff in streaming stores, wherever the target has them (every level, every size) */
        TL_CHECK(pc_model_has_stream_handoff(m) == (PC_STREAM_STORES != 0), "streaming handoff table %s",
                 PC_STREAM_STORES ? "missing" : "present without streaming stores");
        for (int t = 0; t < m->shm_taus && PC_STREAM_STORES; t++)
            for (int s = 0; s < PC_MODEL_NSIZES; s++)
                TL_CHECK(m->shm_stream_time[t][s] > 0, "shm_stream_time[%d][%d] = %g", t, s, m->shm_stream_time[t][s]);
        TL_CHECK(m->transpose_us_per_b > 0 && m->reduce_default_us_per_b > 0, "local figures not positive");
        /* the row of node messages wherever node 0 has two ranks, its 8 B entry the line's start-up; a located
         * switch lies inside the table and is where the row rises */
        TL_CHECK(pc_model_has_shm_msg(m) == (node0 >= 2), "node message row %s (node 0 has %d ranks)",
                 pc_model_has_shm_msg(m) ? "present" : "missing", node0);
        if (pc_model_has_shm_msg(m)) {
            TL_CHECK(m->shm_msg_time[0] == m->shm_alpha_us, "shm_msg 8 B %g, start-up %g", m->shm_msg_time[0],
                     m->shm_alpha_us);
            TL_CHECK(m->shm_msg_time[PC_MODEL_NSIZES - 1] > m->shm_msg_time[0], "a 2 MiB node message no slower than 8 B");
        }
        if (m->shm_step_high_b > 0)
            TL_CHECK(m->shm_step_low_b >= pc_model_sizes[0] && m->shm_step_low_b < m->shm_step_high_b &&
                         m->shm_step_high_b <= pc_model_sizes[PC_MODEL_NSIZES - 1],
                     "node protocol switch %g..%g", m->shm_step_low_b, m->shm_step_high_b);
        if (m->net_ports >= 1) {
            for (int k = 0; k < m->net_ports; k++)
                for (int s = 0; s < PC_MODEL_NSIZES; s++)
                    TL_CHECK(m->net_time[k][s] > 0, "net_time[%d][%d] = %g", k, s, m->net_time[k][s]);
            TL_CHECK(m->net_time[0][PC_MODEL_NSIZES - 1] > m->net_time[0][0], "a 2 MiB message no slower than 8 B");
            TL_CHECK(m->L_us > 0 && m->G_us_per_b > 0 && m->o_us > 0, "LogGP L=%g o=%g G=%g", m->L_us, m->o_us, m->G_us_per_b);
        }
        /* the scheduler turn: measured (a spread) exactly on an oversubscribed layout with a node of two ranks or more
         * (the flag ring), else none, and never negative */
        bool ring = probe_shape.oversubscribed && probe_shape.max_ppn >= 2;
        TL_CHECK(m->turn_us >= 0, "turn %g us", m->turn_us);
        TL_CHECK(ring ? m->spread[PC_FIG_TURN] >= 1 : m->spread[PC_FIG_TURN] == 0 && m->turn_us == 0,
                 "turn %g us, spread %g, on %s", m->turn_us, m->spread[PC_FIG_TURN], shape);
        /* the check after calibration ran every probe that applies to the layout (the node exchange where node 0 has
         * two ranks, the concurrent copies always, the network message between nodes), each probe's recorded ratio
         * lies outside its band exactly when the figures behind it are marked disagreed (and so unstable), and
         * plancoll_fprint_plan's model line shows the ratios */
        int node0_size; /* the ranks of rank 0's node (node 0 of the layout), from MPI's own split */
        MPI_Comm node;
        tl_split_node(comm, 0, &node);
        MPI_Comm_size(node, &node0_size);
        MPI_Comm_free(&node);
        MPI_Bcast(&node0_size, 1, MPI_INT, 0, comm);
        const unsigned behind[PC_CHECK_COUNT] = {PC_FIG_BIT(PC_FIG_SHM_ALPHA) | PC_FIG_BIT(PC_FIG_SHM_BETA),
                                                 PC_FIG_BIT(PC_FIG_TAULOP), PC_FIG_BIT(PC_FIG_NET)};
        bool ran[PC_CHECK_COUNT] = {node0_size >= 2, true, probe_shape.nnodes > 1};
        for (int i = 0; i < PC_CHECK_COUNT; i++) {
            TL_CHECK(ran[i] ? m->check_ratio[i] > 0 && m->check_band[i] >= PC_MODEL_STABLE_SPREAD
                            : m->check_ratio[i] == 0 && m->check_band[i] == 0,
                     "check %s: ratio %g band %g on %s", pc_model_check_names[i], m->check_ratio[i], m->check_band[i], shape);
            if (!ran[i]) continue;
            bool outside = m->check_ratio[i] > m->check_band[i] || m->check_ratio[i] * m->check_band[i] < 1;
            TL_CHECK(outside == ((m->disagreed & behind[i]) == behind[i]), "check %s: ratio %g band %g, disagreed %#x",
                     pc_model_check_names[i], m->check_ratio[i], m->check_band[i], m->disagreed);
        }
        TL_CHECK((m->disagreed & ~m->unstable) == 0, "disagreed %#x not all unstable %#x", m->disagreed, m->unstable);
        char *marks = NULL;
        size_t marks_len = 0;
        FILE *mf = open_memstream(&marks, &marks_len);
        pc_model_fprint_marks(mf, &probe_shape);
        fclose(mf);
        TL_CHECK(marks && strstr(marks, "check (measured/predicted): ") && strstr(marks, " taulop "), "model line: %s",
                 marks ? marks : "(none)");
        TL_CHECK(!m->disagreed || strstr(marks, "; disagreed:"), "model line without the disagreement: %s", marks);
        free(marks);
        /* a second layout plan reuses the model: no calibration-sized pause */
        double before = m->calibration_seconds;
        t0 = MPI_Wtime();
        check_allreduce(comm, 1000, PLANCOLL_ESTIMATE);
        double second = MPI_Wtime() - t0;
        const struct pc_machine_model *again = pc_model_lookup(shape);
        TL_CHECK(again && again->calibration_seconds == before, "the model was measured again");
        if (tl_rank == 0)
            printf("calibration %.2f s; first plan+run %.2f s, second %.2f s; L=%.1f us G=%.3g us/B taus=%d ports=%d\n",
                   before, first, second, m->L_us, m->G_us_per_b, m->shm_taus, m->net_ports);
    }
    check_alltoall(comm, 1000, PLANCOLL_MEASURE);
    check_allreduce(comm, 3, PLANCOLL_MEASURE);
    return tl_finish();
}
