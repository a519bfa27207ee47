/* The models a replay knows, in the order of the table: the bound first, then
 * the raw driver, then the allocators layered on it. */
#include "replay/model.h"

#include <string.h>

const struct cf_rp_model_def *const cf_rp_models[] = {
    &cf_rp_model_lower_bound, &cf_rp_model_driver, &cf_rp_model_pytorch,
    &cf_rp_model_async_pool,  &cf_rp_model_arena,  &cf_rp_model_xla_bfc,
};
const unsigned cf_rp_nmodels = sizeof cf_rp_models / sizeof cf_rp_models[0];

const struct cf_rp_model_def *cf_rp_model_find(const char *name, size_t len)
{
    for (unsigned i = 0; i < cf_rp_nmodels; i++)
        if (strlen(cf_rp_models[i]->name) == len && strncmp(cf_rp_models[i]->name, name, len) == 0)
            return cf_rp_models[i];
    return NULL;
}
