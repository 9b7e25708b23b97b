"""Records the loss recomputed after the update instead of the loss the step was taken on."""
import torch
import torch.nn.functional as F


def train(model, tokens, steps, lr, batch_size, block_size, generator):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        starts = torch.randint(tokens.shape[0] - block_size, (batch_size,), generator=generator)
        positions = starts[:, None] + torch.arange(block_size)
        x, y = tokens[positions], tokens[positions + 1]
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            after = model(x)
        losses.append(F.cross_entropy(after.reshape(-1, after.shape[-1]), y.reshape(-1)).item())
    return losses
