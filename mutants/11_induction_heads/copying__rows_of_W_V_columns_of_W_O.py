"""Takes the head's rows of W_V and columns of W_O (the column-vector convention)."""
import torch


def ov_circuit(W_E, W_V, W_O, W_U, head, n_head):
    d = W_V.shape[0]
    if n_head < 1 or d % n_head or not 0 <= head < n_head:
        raise ValueError(f"head {head} of {n_head} heads does not fit width {d}")
    width = d // n_head
    columns = slice(head * width, (head + 1) * width)
    return W_E @ W_V[columns, :].T @ W_O[:, columns].T @ W_U


def copying_score(circuit):
    diagonal = circuit.diagonal()
    others = circuit.clone()
    others.fill_diagonal_(float("-inf"))
    return (diagonal > others.amax(dim=1)).float().mean().item()
