#include "comet_probe.h"
int comet_probe_run(const comet_probe_opts *opts, comet_probe_machine *m, char *err, size_t errlen)
{ (void)opts; (void)m; (void)err; (void)errlen; return -1; }
