/* libFuzzer target for the wisdom parser (src/planner/wisdom_text.c), built with clang by run-fuzz.sh: no MPI,
 * so leak detection stays on. Every input must either be rejected with a code the API documents and a
 * message, leaving nothing allocated in the output, or be accepted and then survive a round trip: formatting
 * the parsed set, parsing that text and formatting again gives the same bytes, and merging the two sets keeps
 * the records.
 *
 * FUZZ_EXPECT=valid or FUZZ_EXPECT=invalid makes the target abort when an input is not what its name says
 * (run-fuzz.sh checks the seed corpus that way before fuzzing). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/wisdom_text.h"
#include "plancoll_codes.h"

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_wisdom: " __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *expect = getenv("FUZZ_EXPECT");
    struct pc_wisdom_set s;
    char err[256];
    memset(err, 'x', sizeof err);
    int rc = pc_wisdom_parse((const char *)data, size, &s, err, sizeof err);
    CHECK(memchr(err, '\0', sizeof err) != NULL, "the message is not terminated");
    if (rc != PLANCOLL_SUCCESS) {
        CHECK(rc == PLANCOLL_ERR_WISDOM_FORMAT || rc == PLANCOLL_ERR_WISDOM_STALE || rc == PLANCOLL_ERR_NOMEM,
              "rejected with code %d", rc);
        CHECK(err[0] != '\0', "rejected (code %d) without a message", rc);
        CHECK(!s.records && !s.models && s.nrecords == 0 && s.nmodels == 0, "a rejected parse left data behind");
        CHECK(!expect || strcmp(expect, "valid") != 0, "a valid seed was rejected: %s", err);
        return 0;
    }
    CHECK(err[0] == '\0', "accepted with a message: %s", err);
    CHECK(!expect || strcmp(expect, "invalid") != 0, "an invalid seed was accepted");
    for (int i = 1; i < s.nrecords; i++)
        CHECK(strcmp(s.records[i - 1].key, s.records[i].key) < 0, "records not sorted or not unique");

    char *t1 = NULL, *t2 = NULL;
    size_t l1 = 0, l2 = 0;
    CHECK(pc_wisdom_format(&s, &t1, &l1) == PLANCOLL_SUCCESS, "format failed");
    struct pc_wisdom_set s2;
    rc = pc_wisdom_parse(t1, l1, &s2, err, sizeof err);
    CHECK(rc == PLANCOLL_SUCCESS, "the formatted text does not parse: %s\n%s", err, t1);
    CHECK(pc_wisdom_format(&s2, &t2, &l2) == PLANCOLL_SUCCESS, "format failed");
    CHECK(l1 == l2 && memcmp(t1, t2, l1) == 0, "format(parse(format(x))) differs:\n%s\n---\n%s", t1, t2);
    CHECK(s2.nrecords == s.nrecords && s2.nmodels == s.nmodels, "the round trip lost records or models");
    CHECK(pc_wisdom_fingerprint_compare(&s.fp, &s2.fp, err, sizeof err) == PLANCOLL_SUCCESS, "fingerprint changed");
    CHECK(pc_wisdom_set_merge(&s2, &s) == PLANCOLL_SUCCESS, "merge failed");
    CHECK(s2.nrecords == s.nrecords && s2.nmodels == s.nmodels, "merging a set with itself changed its size");
    free(t1);
    free(t2);
    pc_wisdom_set_free(&s2);
    pc_wisdom_set_free(&s);
    return 0;
}
