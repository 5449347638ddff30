/* The wisdom text (wisdom/FORMAT.md): parsing into temporaries, formatting, fingerprint comparison and
 * merging. Pure C with no MPI calls, so the unit tests and the libFuzzer target call it directly; the MPI side
 * (src/api/wisdom_io.c) only reads and writes files, broadcasts the text and commits a parsed set. */
#ifndef PC_WISDOM_TEXT_H
#define PC_WISDOM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/model.h"
#include "planner/planner.h"

#define PC_WISDOM_FORMAT_VERSION 1
#define PC_WISDOM_MAX_BYTES (64u << 20) /* larger text is refused before parsing */
#define PC_WISDOM_MAX_LINE 4096
#define PC_WISDOM_MAX_MODELS 1024
#define PC_WISDOM_MAX_RECORDS 100000

/* Where wisdom was made. registry, mpi_library, mpi_build and topology must match to import it; plancoll and
 * layout are informational (each record's key carries its own ranks and nodes, each model its shape). */
struct pc_wisdom_fingerprint {
    char plancoll[32];      /* library version that wrote it */
    uint64_t registry;      /* pc_registry_signature() */
    char mpi_library[128];  /* first line of MPI_Get_library_version, whitespace normalised */
    uint64_t mpi_build;     /* FNV-1a of the whole MPI_Get_library_version text */
    char topology[160];     /* hwloc summary: "packages=1 cores=2 pus=2 numa=1 cpu=..." */
    char layout[64];        /* the exporting communicator: "P=8 nodes=3 ppn=2-3" */
};

/* A parsed or assembled wisdom text. Records are kept sorted by key, one per key. */
struct pc_wisdom_set {
    struct pc_wisdom_fingerprint fp;
    struct pc_machine_model *models;
    int nmodels;
    struct pc_wisdom_entry *records;
    int nrecords;
};

void pc_wisdom_set_init(struct pc_wisdom_set *s);
void pc_wisdom_set_free(struct pc_wisdom_set *s);

/* Parses text[0..len) into *out (initialised here). Returns PLANCOLL_SUCCESS; PLANCOLL_ERR_WISDOM_FORMAT for
 * malformed text; PLANCOLL_ERR_WISDOM_STALE for another format version; PLANCOLL_ERR_NOMEM. On failure err holds
 * "line N: what is wrong" and *out is empty. The fingerprint is parsed, not judged: see
 * pc_wisdom_fingerprint_compare. */
int pc_wisdom_parse(const char *text, size_t len, struct pc_wisdom_set *out, char *err, size_t errlen);

/* Formats s (canonical: records sorted by key, numbers exact) into a malloc'd NUL-terminated *text of *len
 * bytes. Returns PLANCOLL_SUCCESS or PLANCOLL_ERR_NOMEM. */
int pc_wisdom_format(const struct pc_wisdom_set *s, char **text, size_t *len);

/* PLANCOLL_SUCCESS when wisdom made under `file` is valid `here`, else PLANCOLL_ERR_WISDOM_STALE with the
 * first difference in err (registry signature, MPI library, MPI build, topology). */
int pc_wisdom_fingerprint_compare(const struct pc_wisdom_fingerprint *file, const struct pc_wisdom_fingerprint *here,
                                  char *err, size_t errlen);

/* Collapses whitespace and control characters to single spaces and trims, in place: how fingerprint strings
 * are written and compared. */
void pc_wisdom_normalize_text(char *s);

/* Builds a set from n entries in any order (duplicates resolved by pc_wisdom_prefer) and models (the last of a
 * shape wins). Copies; returns PLANCOLL_SUCCESS or PLANCOLL_ERR_NOMEM. */
int pc_wisdom_set_fill(struct pc_wisdom_set *s, const struct pc_wisdom_entry *entries, int n,
                       const struct pc_machine_model *models, int nmodels);
/* Adds from's records and models to into: for a key held by both, pc_wisdom_prefer decides (from wins ties);
 * a model of the same shape is replaced by from's. into's fingerprint is kept. */
int pc_wisdom_set_merge(struct pc_wisdom_set *into, const struct pc_wisdom_set *from);
/* The same for a file that several jobs write (PLANCOLL_WISDOM at MPI_Finalize, plancoll-wisdom merge), where
 * "incoming" is only whichever job came last: records are chosen by pc_wisdom_prefer_in_file, so the records
 * written do not depend on the order of the writers. Models as above (one per shape, from's replaces). */
int pc_wisdom_set_merge_file(struct pc_wisdom_set *into, const struct pc_wisdom_set *from);
/* Whether b replaces a for the same key in a file: the more rigorous; then the more recently decided; then the
 * smaller measured time; then the algorithm name, then the parameters, in byte order (smaller wins). Symmetric:
 * for records that differ in any of these, exactly one of prefer(a, b) and prefer(b, a) holds. */
bool pc_wisdom_prefer_in_file(const struct pc_wisdom_entry *a, const struct pc_wisdom_entry *b);

/* "measure", "patient", "exhaustive" (or "none") for a rigor flag. */
const char *pc_wisdom_rigor_name(unsigned rigor);

#endif
