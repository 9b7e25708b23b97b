"""Counts 6N only, forgetting attention's products."""


def training_flops_per_token(n_params, n_layer, context_length, d_model):
    return 6 * n_params
