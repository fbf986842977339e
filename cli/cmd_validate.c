/* comet validate: not built yet. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int comet_cmd_validate(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: comet validate [options]\n\nnot built yet.\n");
            return COMET_EXIT_OK;
        }
    comet_cli_error("validate", "this subcommand is not built yet");
    return COMET_EXIT_USAGE;
}
