"""Counts characters instead of UTF-8 bytes."""
import math


def bits_per_byte(mean_loss, n_tokens, text):
    """Convert a mean per-token loss into bits per UTF-8 byte of the text those tokens encode.

    Args:
        mean_loss: float (or 0-d tensor) >= 0, the mean cross-entropy in nats over n_tokens predictions.
        n_tokens: int >= 1, how many tokens the mean is over.
        text: non-empty str, the text those n_tokens tokens encode.
    Returns:
        A Python float: mean_loss * n_tokens / (ln 2 * number of UTF-8 bytes of text).
    Raises:
        ValueError: if n_tokens < 1 or text is empty.
    """
    n_bytes = len(text)
    if n_tokens < 1 or n_bytes == 0:
        raise ValueError("need at least one token and a non-empty text")
    return float(mean_loss) * n_tokens / (math.log(2) * n_bytes)
