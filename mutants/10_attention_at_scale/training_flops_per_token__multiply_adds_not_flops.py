"""Counts multiply-adds (3N + 6 L T d) instead of FLOPs."""


def training_flops_per_token(n_params, n_layer, context_length, d_model):
    return 3 * n_params + 6 * n_layer * context_length * d_model
