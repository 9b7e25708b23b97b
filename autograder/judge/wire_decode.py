"""``decode``: the judge's side of the wire (``wire``), which trusts nothing.

It checks every tag, type, size and depth of a message and raises ``wire.WireError`` on anything
else, so a forged or malformed message is that submission's error, never the grader's. It builds
only plain tensors, arrays and Python data (no pickle, ever). A tensor is decoded on the CPU with the
device it lived on recorded (``wire.device_of``); the student's side (``restore_devices=True``) puts
it back on that device when the device exists there.
"""

from __future__ import annotations

import base64
import re

from .wire import _TENSOR_DTYPES, DEVICE_ATTRIBUTE, MAX_DEPTH, MAX_ELEMENTS, MAX_ITEMS, MAX_MESSAGE_BYTES, WireError

# ``resolve`` maps a ref id to an object (kernel side) or wraps it (judge side).


def decode(value, resolve=None, depth: int = 0, resolve_global=None, *, restore_devices: bool = False):
    """The value an encoded message stands for. ``restore_devices`` (the student's side): a tensor sent
    from another device goes back to it when this process has that device; otherwise (the judge) it
    stays on the CPU with its device recorded (``wire.device_of``)."""
    if restore_devices:
        return _with_devices_restored(decode(value, resolve, depth, resolve_global))
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    kind = type(value)
    if value is None or kind in (bool, str, int, float):
        return value
    if kind is list:
        if len(value) > MAX_ITEMS:
            raise WireError("list too long")
        return [decode(v, resolve, depth + 1, resolve_global) for v in value]
    if kind is not dict:
        raise WireError(f"unexpected JSON value of type {kind.__name__}")
    tag = value.get("$")
    # A tag that is not a string (a list, a number) is unknown, not a lookup error.
    decoder = _DECODERS.get(tag) if isinstance(tag, str) else None
    if decoder is None:
        raise WireError(f"unknown tag {tag!r}")
    return decoder(value, resolve, depth, resolve_global)


# One function per tag: ``(value, resolve, depth, resolve_global)``, ``value`` a dict holding that tag,
# ``depth`` its own depth (its items are decoded one deeper). Each checks every field it reads.


def _decode_float(value: dict, resolve, depth: int, resolve_global):
    text = value.get("v")
    if text not in ("inf", "-inf", "nan"):
        raise WireError("bad float")
    return float(text)


def _decode_tuple(value: dict, resolve, depth: int, resolve_global):
    items = _list(value, "items")
    return tuple(decode(v, resolve, depth + 1, resolve_global) for v in items)


def _decode_dict(value: dict, resolve, depth: int, resolve_global):
    out = {}
    for pair in _list(value, "items"):
        if type(pair) is not list or len(pair) != 2:
            raise WireError("bad dict item")
        key = decode(pair[0], resolve, depth + 1, resolve_global)
        if not isinstance(key, (str, int, float, bool, type(None), tuple)):
            raise WireError("bad dict key")
        out[key] = decode(pair[1], resolve, depth + 1, resolve_global)
    return out


def _decode_bytes(value: dict, resolve, depth: int, resolve_global):
    return _b64(value.get("data"))


def _decode_dtype(value: dict, resolve, depth: int, resolve_global):
    import torch

    name = value.get("name")
    if name not in _TENSOR_DTYPES:
        raise WireError("bad dtype")
    return getattr(torch, name)


def _decode_generator(value: dict, resolve, depth: int, resolve_global):
    import torch

    state = torch.frombuffer(bytearray(_b64(value.get("state"))), dtype=torch.uint8)
    generator = torch.Generator()
    try:
        generator.set_state(state.clone())
    except RuntimeError as error:
        raise WireError(f"bad generator state: {error}") from None
    return generator


def _decode_global(value: dict, resolve, depth: int, resolve_global):
    name = value.get("name")
    if type(name) is not str or resolve_global is None:
        raise WireError("bad global name")
    return resolve_global(name)


def _decode_ref(value: dict, resolve, depth: int, resolve_global):
    ident = value.get("id")
    if type(ident) is not int or resolve is None:
        raise WireError("bad reference")
    return resolve(ident)


def _with_devices_restored(value):
    """``value`` with each tensor that records another device moved there, where this process has it."""
    import torch

    if isinstance(value, torch.Tensor):
        return _restored(value)
    if type(value) is list:
        return [_with_devices_restored(v) for v in value]
    if type(value) is tuple:
        return tuple(_with_devices_restored(v) for v in value)
    if type(value) is dict:
        return {k: _with_devices_restored(v) for k, v in value.items()}
    return value


def _restored(tensor):
    import torch

    device = vars(tensor).get(DEVICE_ATTRIBUTE)
    if device is None:
        return tensor
    try:
        moved = tensor.detach().to(device)
    except (RuntimeError, AssertionError, ValueError):   # no such device here: keep the record
        return tensor
    if type(tensor) is torch.nn.Parameter:
        return torch.nn.Parameter(moved, requires_grad=tensor.requires_grad)
    return moved.requires_grad_(tensor.requires_grad) if tensor.requires_grad else moved


def _list(value: dict, key: str) -> list:
    items = value.get(key)
    if type(items) is not list or len(items) > MAX_ITEMS:
        raise WireError(f"bad {key}")
    return items


def _b64(text) -> bytes:
    if type(text) is not str or len(text) > MAX_MESSAGE_BYTES:
        raise WireError("bad base64 data")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise WireError("bad base64 data") from None


def _shape(value: dict) -> list[int]:
    shape = value.get("shape")
    if type(shape) is not list or len(shape) > 16 or not all(type(s) is int and 0 <= s for s in shape):
        raise WireError("bad shape")
    count = 1
    for size in shape:
        count *= size
    if count > MAX_ELEMENTS:
        raise WireError("tensor too large")
    return shape


def _in_sent_layout(tensor, value: dict, dims: int):
    """A tensor sent in memory order (``"order"``: a transposed one) with its dimensions put back, which
    restores its strides; any other tensor as it is."""
    if "order" not in value:
        return tensor
    order = value["order"]
    if type(order) is not list or len(order) != dims or not all(type(d) is int for d in order) \
            or sorted(order) != list(range(dims)):
        raise WireError("bad tensor order")
    return tensor.permute([order.index(d) for d in range(dims)])


def _decode_tensor(value: dict, resolve=None, depth: int = 0, resolve_global=None):
    import torch

    name = value.get("dtype")
    if name not in _TENSOR_DTYPES:
        raise WireError("bad tensor dtype")
    shape = _shape(value)
    raw = _b64(value.get("data"))
    dtype = getattr(torch, name)
    storage_dtype = torch.int16 if name == "bfloat16" else dtype
    itemsize = torch.empty((), dtype=storage_dtype).element_size()
    count = 1
    for size in shape:
        count *= size
    if len(raw) != count * itemsize:
        raise WireError("tensor data does not match its shape")
    flat = torch.frombuffer(bytearray(raw), dtype=storage_dtype) if raw else torch.empty(0, dtype=storage_dtype)
    tensor = flat.clone().reshape(shape)
    if name == "bfloat16":
        tensor = tensor.view(torch.bfloat16)
    tensor = _in_sent_layout(tensor, value, len(shape))
    grad = value.get("grad") is True and (tensor.is_floating_point() or tensor.is_complex())
    if value.get("parameter") is True:
        tensor = torch.nn.Parameter(tensor, requires_grad=grad)
    elif grad:
        tensor.requires_grad_(True)
    device = value.get("device", "cpu")
    if type(device) is not str or len(device) > 40 or not _DEVICE_NAME.fullmatch(device):
        raise WireError("bad tensor device")
    if device != "cpu":
        setattr(tensor, DEVICE_ATTRIBUTE, device)
    return tensor


def _decode_ndarray(value: dict, resolve=None, depth: int = 0, resolve_global=None):
    import numpy as np

    try:
        dtype = np.dtype(value.get("dtype"))
    except TypeError:
        raise WireError("bad array dtype") from None
    if dtype.kind not in "biufc" or dtype.hasobject:
        raise WireError("bad array dtype")
    shape = _shape(value)
    raw = _b64(value.get("data"))
    count = 1
    for size in shape:
        count *= size
    if len(raw) != count * dtype.itemsize:
        raise WireError("array data does not match its shape")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _decode_numpy_scalar(value: dict, resolve=None, depth: int = 0, resolve_global=None):
    import numpy as np

    try:
        dtype = np.dtype(value.get("dtype"))
    except TypeError:
        raise WireError("bad NumPy scalar dtype") from None
    if dtype.kind not in "biufc" or dtype.hasobject or dtype.shape:
        raise WireError("bad NumPy scalar dtype")
    raw = _b64(value.get("data"))
    if len(raw) != dtype.itemsize:
        raise WireError("NumPy scalar data does not match its dtype")
    return np.frombuffer(raw, dtype=dtype)[0]


_DEVICE_NAME = re.compile(r"[a-z_]+(:[0-9]{1,3})?")
_DECODERS = {
    "float": _decode_float, "tuple": _decode_tuple, "dict": _decode_dict, "bytes": _decode_bytes,
    "tensor": _decode_tensor, "ndarray": _decode_ndarray, "npscalar": _decode_numpy_scalar, "dtype": _decode_dtype, "generator": _decode_generator,
    "global": _decode_global, "ref": _decode_ref,
}
