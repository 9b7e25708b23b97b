"""Counts the forward pass only: 2N + 4 L T d."""


def training_flops_per_token(n_params, n_layer, context_length, d_model):
    return 2 * n_params + 4 * n_layer * context_length * d_model
