"""Right value, but a float (6.0 * N ...) instead of an exact int."""


def training_flops_per_token(n_params, n_layer, context_length, d_model):
    return 6.0 * n_params + 12.0 * n_layer * context_length * d_model
