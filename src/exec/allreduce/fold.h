/* The fold that lets power-of-two algorithms run on any P: among the first 2*rem ranks (rem = P - pof2), each
 * even rank hands its vector to the odd rank above it and sits out; the survivors are renumbered in rank order,
 * so rank order (and with it a non-commutative op's order) is kept. */
#ifndef PC_FOLD_H
#define PC_FOLD_H

struct pc_fold {
    int pof2, rem;
    int newrank; /* -1 for a rank that sits out */
};

static inline struct pc_fold pc_fold_make(int rank, int size)
{
    struct pc_fold f;
    f.pof2 = 1;
    while (f.pof2 * 2 <= size) f.pof2 *= 2;
    f.rem = size - f.pof2;
    if (rank < 2 * f.rem)
        f.newrank = rank % 2 ? rank / 2 : -1;
    else
        f.newrank = rank - f.rem;
    return f;
}

/* The real rank of survivor newrank. */
static inline int pc_fold_real(const struct pc_fold *f, int newrank)
{
    return newrank < f->rem ? newrank * 2 + 1 : newrank + f->rem;
}

#endif
