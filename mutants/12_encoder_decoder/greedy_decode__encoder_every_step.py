"""Runs the encoder and the cross-attention projections again at every step."""
import torch


def greedy_decode(model, src, src_padding_mask, max_len, bos_id=1, eos_id=2, pad_id=0):
    """Greedy decoding with an encoder-decoder that has Seq2Seq's encode, cross_kv and decode methods.

    src: int64 (B, S); src_padding_mask: bool (B, S), True at padding; max_len >= 0: the most tokens a row gets.
    Calls model.encode(src, src_padding_mask) once and model.cross_kv(memory) once, and passes that one
    memory_kv to every step. Every row starts from [bos_id]; each step calls
    model.decode(tokens so far, memory_kv, src_padding_mask) once and appends the argmax of the LAST
    position's logits. A row that has produced eos_id is finished: from then on it gets pad_id (whatever the
    model says). Decoding stops when every row is finished or after max_len steps, whichever comes first (so
    model.decode is called once per returned column, never more).
    Returns a new int64 tensor (B, L) of the generated tokens without the BOS, L <= max_len (L < max_len only
    when every row has finished; max_len = 0 gives shape (B, 0)). Runs with gradients off and the model in
    eval mode, and gives the model back in the mode (train or eval) it came in.
    """
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            memory_kv = model.cross_kv(model.encode(src, src_padding_mask))
            tokens = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
            finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
            for _ in range(max_len):
                if finished.all():
                    break
                memory_kv = model.cross_kv(model.encode(src, src_padding_mask))
                logits = model.decode(tokens, memory_kv, src_padding_mask)
                chosen = logits[:, -1].argmax(dim=-1)
                chosen = torch.where(finished, torch.full_like(chosen, pad_id), chosen)
                tokens = torch.cat([tokens, chosen[:, None]], dim=1)
                finished = finished | (chosen == eos_id)
    finally:
        model.train(was_training)
    return tokens[:, 1:].clone()
