"""Compares the top two entries of each row, which fails for a 1 x 1 circuit (no second entry)."""
import torch


def ov_circuit(W_E, W_V, W_O, W_U, head, n_head):
    d = W_V.shape[0]
    if n_head < 1 or d % n_head or not 0 <= head < n_head:
        raise ValueError(f"head {head} of {n_head} heads does not fit width {d}")
    width = d // n_head
    columns = slice(head * width, (head + 1) * width)
    return W_E @ W_V[:, columns] @ W_O[columns, :] @ W_U


def copying_score(circuit):
    values, indices = circuit.topk(2, dim=1)
    copies = (indices[:, 0] == torch.arange(circuit.shape[0])) & (values[:, 0] > values[:, 1])
    return copies.float().mean().item()
