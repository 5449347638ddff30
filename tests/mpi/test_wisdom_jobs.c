/* One of several concurrent jobs that share one PLANCOLL_WISDOM file (run-wisdom-jobs-test.sh starts them).
 *
 *   test_wisdom_jobs JOB JOBS RECORDS DIR
 *
 * The job reads the file at its first plan, learns RECORDS records and one model that are its own (keys and
 * shape carry JOB), plus one record for a key that every job holds, then waits until all JOBS jobs have
 * learned theirs (a barrier made of files DIR/ready-<job>, since the jobs share no communicator) and calls
 * MPI_Finalize at once, where the file is merged and written: all jobs write at the same moment. The driver
 * then checks that the file holds every job's records and models, and that the shared key holds the record
 * the file merge rule picks whatever the order of the writers (the smallest measured time; see
 * wisdom/FORMAT.md, "Merging").
 *
 * Records and models are learned by importing a text, not by measuring: the subject is the file at
 * MPI_Finalize, and an import changes what the process knows exactly as a measured plan does. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

/* Keys and values the driver checks too (run-wisdom-jobs-test.sh): keep them in step. */
#define OWN_KEY "alltoall:P=1:nodes=1:ppn=1-1:block=%d:inplace=0"
#define SHARED_KEY "alltoall:P=1:nodes=1:ppn=1-1:block=999999:inplace=0"
#define DECIDED 1700000000LL /* every job decided its shared record in the same second */

static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0) return -1;
        if ((size_t)n < *cap - *len) {
            *len += (size_t)n;
            return 0;
        }
        char *grown = realloc(*buf, *cap * 2 + (size_t)n);
        if (!grown) return -1;
        *buf = grown;
        *cap = *cap * 2 + (size_t)n;
    }
}

/* This process's wisdom text with the job's own records and model added before the closing "end". */
static char *own_wisdom(int job, int records)
{
    char *text = NULL;
    TL_OK(plancoll_export_wisdom_to_string(&text, MPI_COMM_WORLD));
    if (!text) return NULL;
    char *end = strstr(text, "\nend\n");
    TL_CHECK(end != NULL, "the exported text has no closing 'end' line");
    if (!end) {
        free(text);
        return NULL;
    }
    end[1] = '\0'; /* keep the header, models and records; drop "end" */
    size_t len = strlen(text), cap = len + 256;
    char *buf = malloc(cap);
    if (!buf) {
        free(text);
        return NULL;
    }
    memcpy(buf, text, len + 1);
    free(text);
    int bad = append(&buf, &len, &cap,
                     "begin model\nshape P=1:N=1:ppn=1-1:job=%d\ncalibrated 1 0.%03d\nsync %d.5\nend model\n", job,
                     job, job + 1);
    for (int k = 0; k < records && !bad; k++) {
        char key[96];
        snprintf(key, sizeof key, OWN_KEY, 1000000 + job * records + k);
        bad = append(&buf, &len, &cap, "record %s alltoall.pairwise us=%d.25 rigor=measure decided=%lld\n", key,
                     10 + k, DECIDED + job);
    }
    /* the shared key: the same rigor and second everywhere, job j measured 100 + j us */
    if (!bad)
        bad = append(&buf, &len, &cap, "record " SHARED_KEY " alltoall.%s us=%d.5 rigor=measure decided=%lld\nend\n",
                     job % 2 ? "bruck" : "pairwise", 100 + job, DECIDED);
    if (bad) {
        free(buf);
        return NULL;
    }
    return buf;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "wisdom-jobs");
    int job = argc > 4 ? atoi(argv[1]) : -1, jobs = argc > 4 ? atoi(argv[2]) : 0;
    int records = argc > 4 ? atoi(argv[3]) : 0;
    const char *dir = argc > 4 ? argv[4] : NULL;
    if (!dir || job < 0 || jobs <= job || records < 0 || tl_size != 1 || !getenv("PLANCOLL_WISDOM")) {
        fprintf(stderr, "usage: PLANCOLL_WISDOM=FILE test_wisdom_jobs JOB JOBS RECORDS DIR (one rank per job)\n");
        MPI_Finalize();
        return 2;
    }

    /* the first plan reads PLANCOLL_WISDOM (absent: every job of a round reads before any writes) */
    char sbuf[8], rbuf[8];
    plancoll_plan plan = NULL;
    TL_OK(plancoll_plan_alltoall(sbuf, 8, MPI_BYTE, rbuf, 8, MPI_BYTE, MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &plan));
    if (plan) TL_OK(plancoll_destroy_plan(&plan));

    char *text = own_wisdom(job, records);
    TL_CHECK(text != NULL, "could not build the job's wisdom text");
    if (text) TL_OK(plancoll_import_wisdom_from_string(text, MPI_COMM_WORLD));
    free(text);

    /* all jobs have learned theirs before any finalizes: then they write together */
    char path[4096];
    snprintf(path, sizeof path, "%s/ready-%d", dir, job);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    TL_CHECK(fd >= 0, "cannot create %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    struct timespec start, now, pause = {0, 200000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int j = 0, waited = 0; j < jobs && !waited;) {
        snprintf(path, sizeof path, "%s/ready-%d", dir, j);
        if (exists(path)) {
            j++;
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 60) {
            TL_CHECK(false, "job %d never became ready", j);
            waited = 1;
        }
        nanosleep(&pause, NULL);
    }
    /* the verdict first (the driver judges the file after every job has ended), then the write */
    printf("plancoll-test wisdom-jobs job=%d of %d: %s (%ld checks, %ld failed)\n", job, jobs,
           tl_failures ? "FAIL" : "PASS", tl_checks, tl_failures);
    fflush(stdout);
    MPI_Finalize();
    return tl_failures ? 1 : 0;
}
