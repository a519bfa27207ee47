/* The CUDAFRAG_* table as the command prints it: plain text for --help and a
 * Markdown table for --help-markdown (docs/configuration.md is generated from it). */
#ifndef CF_CLI_OPTIONS_DOC_H
#define CF_CLI_OPTIONS_DOC_H

#include <stdio.h>

void cf_print_options_text(FILE *out);
void cf_print_options_markdown(FILE *out);

#endif
