"""Compares the diagonal entry with the rest of its column, not its row."""
import torch


def ov_circuit(W_E, W_V, W_O, W_U, head, n_head):
    d = W_V.shape[0]
    if n_head < 1 or d % n_head or not 0 <= head < n_head:
        raise ValueError(f"head {head} of {n_head} heads does not fit width {d}")
    width = d // n_head
    columns = slice(head * width, (head + 1) * width)
    return W_E @ W_V[:, columns] @ W_O[columns, :] @ W_U


def copying_score(circuit):
    diagonal = circuit.diagonal()
    others = circuit.clone()
    others.fill_diagonal_(float("-inf"))
    return (diagonal > others.amax(dim=0)).float().mean().item()
