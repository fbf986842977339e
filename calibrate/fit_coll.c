/* Thakur-Rabenseifner-Gropp (IJHPCA 2005) cost rows of MPICH's collective
 * algorithms: T = a(p) alpha + b(p, n) beta + c(p, n) gamma, linear in the
 * three parameters so that every measurement is one least-squares row. The
 * table lives in the model (comet_model_coll_row), which predicts with the
 * same rows it was fitted with. */
#include "comet_calibrate.h"
#include "comet_model.h"

#include <errno.h>
#include <string.h>

int comet_calibrate_trg_row(
    const char *coll, const char *alg, double bytes, int p, double row[3], const char **formula)
{
    comet_model_coll c;
    if (!coll || !alg || p < 1 || !(bytes >= 0))
        return -EINVAL;
    if (!strcmp(coll, "pingpong") || !strcmp(coll, "exchange")) {
        row[0] = 1;
        row[1] = bytes;
        row[2] = 0;
        if (formula)
            *formula = "alpha + n beta (Hockney)"; /* exchange: both messages */
        return 1;
    }
    if (comet_model_coll_parse(coll, &c) != 0)
        return -EINVAL;
    return comet_model_coll_row(c, alg, bytes, p, row, formula);
}
