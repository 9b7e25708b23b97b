"""Runs the model with autograd recording: no torch.no_grad() around the forward passes."""
import torch
import torch.nn.functional as F


def loss_with_head_ablated(model, tokens, mask, layer=None, head=None, mode="zero"):
    if mode not in ("zero", "mean"):
        raise ValueError(f"mode must be 'zero' or 'mean', got {mode!r}")
    if (layer is None) != (head is None):
        raise ValueError("give both layer and head, or neither")
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def loss():
        logits = model(inputs)
        losses = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view(mask.shape)
        return losses[mask].mean().item()

    if True:
        if layer is None:
            return loss()
        point = model.layers[layer].head_outputs
        replacement = None
        if mode == "mean":
            seen = []
            handle = point.register_forward_hook(lambda module, args, output: seen.append(output[:, head].mean(dim=(0, 1))))
            try:
                model(inputs)
            finally:
                handle.remove()
            replacement = seen[0]

        def ablate(module, args, output):
            output = output.clone()
            output[:, head] = 0.0 if replacement is None else replacement
            return output

        handle = point.register_forward_hook(ablate)
        try:
            return loss()
        finally:
            handle.remove()
