"""Creates a new Adam optimizer at every step, which throws away its running averages."""
import torch
import torch.nn.functional as F


def train(model, tokens, steps, lr, batch_size, block_size, generator):
    losses = []
    for _ in range(steps):
        starts = torch.randint(tokens.shape[0] - block_size, (batch_size,), generator=generator)
        positions = starts[:, None] + torch.arange(block_size)
        x, y = tokens[positions], tokens[positions + 1]
        logits = model(x)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
