"""Counts a tied output layer as a second matrix."""
def attention_params(d_model, n_head, bias=True):
    """Parameters of one multi-head attention layer (Q, K, V and output projections, d_model x d_model).

    Args: d_model (int), n_head (int, divides d_model), bias (bool: every projection has a bias).
    Returns: int, the same as sum(p.numel() for p in nn.MultiheadAttention(d_model, n_head, bias=bias).parameters()).
    """
    # h heads of 3 * d * (d / h) input weights = 3 d^2 whatever h is, plus the d x d output projection.
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def ffn_params(d_model, d_ff, bias=True):
    """Parameters of the position-wise feed-forward network Linear(d_model, d_ff) -> Linear(d_ff, d_model).

    Returns: int, 2 * d_model * d_ff weights plus (if bias) the biases of both layers.
    """
    return 2 * d_model * d_ff + ((d_ff + d_model) if bias else 0)


def layernorm_params(d_model):
    """Parameters of one nn.LayerNorm(d_model): a scale and a shift per feature. Returns an int."""
    return 2 * d_model


def embedding_params(vocab_size, d_model, context_length=0, tied=True):
    """Parameters of the token embedding, learned position embedding and output (unembedding) layer.

    Args:
        vocab_size, d_model: ints. context_length: number of learned positions (0 for sinusoidal or
        rotary encodings, which have no parameters). tied: the output layer (d_model -> vocab_size,
        no bias) reuses the token-embedding matrix; if False it is a separate matrix.
    Returns: int.
    """
    token_table = vocab_size * d_model
    output_layer = vocab_size * d_model     # a tied matrix is one tensor, counted once
    return token_table + output_layer + context_length * d_model
