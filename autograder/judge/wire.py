"""The values that cross between the judge and the student's kernel, and how they are written.

One JSON object per message, on one line. Values are encoded as plain JSON where JSON can hold them,
and as tagged objects otherwise:

* ``{"$": "tensor", "dtype": "float32", "shape": [2, 3], "data": "<base64>", "grad": false}``, plus
  ``"device": "cuda:0"`` for a tensor that lived on another device than the CPU and ``"parameter": true``
  for an ``nn.Parameter`` (any other subclass of ``torch.Tensor`` travels as a plain tensor)
* ``{"$": "ndarray", "dtype": "<f8", "shape": [...], "data": "<base64>"}``
* ``{"$": "npscalar", "dtype": "<i8", "data": "<base64>"}``: a NumPy number (``numpy.int64``,
  ``numpy.float32``, ``numpy.bool_``...), which arrives as the same NumPy type, not as a Python number
* ``{"$": "float", "v": "inf"}`` (NaN and the infinities, which JSON lacks)
* ``{"$": "bytes", "data": "<base64>"}``, ``{"$": "tuple", "items": [...]}``,
  ``{"$": "dict", "items": [[key, value], ...]}`` (keys: str, int, float, bool, None, tuples of them)
* ``{"$": "dtype", "name": "float64"}``, ``{"$": "generator", "state": "<base64>"}``
* ``{"$": "ref", "id": 7}``: an object that stays where it lives (a module, an iterator...)
* ``{"$": "global", "name": "cross_entropy"}``: a name in the student's namespace (judge to kernel only)

``decode`` (``wire_decode``) is the judge's side: it trusts nothing. It checks every tag, type, size and depth and
raises ``WireError`` on anything else, so a forged or malformed message is that submission's error,
never the grader's. It builds only plain tensors, arrays and Python data (no pickle, ever).

**Types arrive as they left**: a Python ``bool`` stays a ``bool`` (not an ``int``), an ``int`` an ``int``,
a ``float`` a ``float``, a NumPy scalar the same NumPy scalar type, an array its dtype, a tensor its
dtype, ``requires_grad`` and ``nn.Parameter``-ness, so a check of a result's type gives the same verdict
in the judge as in the student's kernel. A tensor is always decoded on the CPU (the judge may have no
GPU); the device it lived on is kept with it (``device_of``): ``utils.checks`` reads it, so
``assert_tensor(..., device="cpu")`` fails in the judge for a tensor that was on ``cuda`` in the student's
process, as it does there. The student's side (``decode(..., restore_devices=True)``) puts such a tensor
back on its device when that device exists there.
"""

from __future__ import annotations

import base64
import functools
import math

MAX_MESSAGE_BYTES = 64 * 1024 * 1024   # one message on the wire
MAX_DEPTH = 20                         # nesting of lists/dicts
MAX_ITEMS = 100_000                    # elements of one list/dict
MAX_ELEMENTS = 16 * 1024 * 1024        # elements of one tensor/array

_TENSOR_DTYPES = {
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "uint8", "int8", "int16", "int32", "int64", "bool",
}


# The attribute of a decoded tensor that records the device it lived on (absent: it lived on the CPU).
DEVICE_ATTRIBUTE = "_wire_device"


def device_of(tensor) -> str:
    """The device a tensor lives on, or lived on before it crossed the wire (``"cpu"``, ``"cuda:0"``...)."""
    import torch

    actual = str(torch._C.TensorBase.__dict__["device"].__get__(tensor))
    if actual != "cpu":
        return actual
    held = vars(tensor).get(DEVICE_ATTRIBUTE)
    return held if type(held) is str else actual


class WireError(ValueError):
    """A message or value that does not follow the protocol."""


class Ref:
    """A reference to an object that stays on the other side: a number, or a name in its namespace."""

    __slots__ = ("id",)

    def __init__(self, ident: int):
        self.id = ident

    def __repr__(self) -> str:
        return f"Ref({self.id})"


# ----------------------------------------------------------------------------------------------
# Encoding (both sides). ``remember`` turns an unencodable object into a Ref (kernel side) or
# raises (judge side: the judge only sends what it built itself).


def encode(value, remember=None, depth: int = 0):
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    for accepts, encoder in _encoders():
        if accepts(value):
            return encoder(value, remember, depth)
    if remember is not None:
        return {"$": "ref", "id": remember(value)}
    raise WireError(f"cannot send a {type(value).__name__} by value")


@functools.cache
def _encoders() -> tuple:
    """(accepts, encoder) pairs, tried in order: the first that accepts a value encodes it. Order
    matters: ``bool`` is an ``int``, NumPy's ``float64`` a ``float``, ``torch.Size`` a ``tuple``.
    Built on first use, so that importing this module imports neither NumPy nor PyTorch."""
    import numpy as np
    import torch

    def instance_of(kind):
        return lambda value: isinstance(value, kind)

    return (
        (_is_numpy_number, _encode_numpy_scalar),   # before float: numpy.float64 is a float
        (_is_json_scalar, _as_is),
        (instance_of(float), _encode_float),
        (instance_of(Ref), _encode_ref),
        (instance_of(torch.Tensor), _encode_tensor),
        (instance_of(np.ndarray), _encode_ndarray),
        (instance_of(np.generic), _encode_numpy_other),
        (instance_of(bytes), _encode_bytes),
        (instance_of(torch.dtype), _encode_dtype),
        (instance_of(torch.Generator), _encode_generator),
        (instance_of(torch.Size), _encode_size),
        (lambda value: type(value) is list, _encode_list),
        (_is_tuple, _encode_tuple),
        (_is_dict_with_plain_keys, _encode_dict),
    )


# One function per kind of value: ``(value, remember, depth)``, ``depth`` the value's own depth (its
# items are encoded one deeper).


def _is_numpy_number(value) -> bool:
    import numpy as np

    return isinstance(value, np.generic) and value.dtype.kind in "biufc"


def _is_json_scalar(value) -> bool:
    return value is None or isinstance(value, (bool, str, int))


def _as_is(value, remember, depth):
    return value


def _encode_float(value, remember, depth):
    return value if math.isfinite(value) else {"$": "float", "v": repr(value)}


def _encode_ref(value, remember, depth):
    return {"$": "global", "name": value.id} if isinstance(value.id, str) else {"$": "ref", "id": value.id}


def _encode_ndarray(value, remember, depth):
    import numpy as np

    if value.dtype.kind not in "biufc":
        raise WireError(f"cannot send a NumPy array of dtype {value.dtype}")
    array = np.ascontiguousarray(value)
    return {"$": "ndarray", "dtype": array.dtype.str, "shape": list(array.shape),
            "data": base64.b64encode(array.tobytes()).decode("ascii")}


def _encode_numpy_scalar(value, remember, depth):
    return {"$": "npscalar", "dtype": value.dtype.str, "data": base64.b64encode(value.tobytes()).decode("ascii")}


def _encode_numpy_other(value, remember, depth):
    """A NumPy scalar that is not a number (``numpy.str_``, ``numpy.datetime64``...): as its Python value."""
    return encode(value.item(), remember, depth + 1)


def _encode_bytes(value, remember, depth):
    return {"$": "bytes", "data": base64.b64encode(value).decode("ascii")}


def _encode_dtype(value, remember, depth):
    return {"$": "dtype", "name": str(value).removeprefix("torch.")}


def _encode_generator(value, remember, depth):
    return {"$": "generator", "state": base64.b64encode(value.get_state().numpy().tobytes()).decode("ascii")}


def _encode_size(value, remember, depth):
    return {"$": "tuple", "items": [int(v) for v in value]}


def _encode_list(value, remember, depth):
    return [encode(v, remember, depth + 1) for v in value]


def _is_tuple(value) -> bool:
    """A plain tuple or a named tuple (a tuple subclass of another kind is sent by reference)."""
    return type(value) is tuple or (isinstance(value, tuple) and hasattr(value, "_fields"))


def _encode_tuple(value, remember, depth):
    return {"$": "tuple", "items": [encode(v, remember, depth + 1) for v in value]}


def _is_dict_with_plain_keys(value) -> bool:
    """A dict whose keys the other side can rebuild by value (else the dict is sent by reference)."""
    return isinstance(value, dict) and all(isinstance(k, (str, int, float, bool, type(None), tuple)) for k in value)


def _encode_dict(value, remember, depth):
    return {"$": "dict", "items": [[encode(k, remember, depth + 1), encode(v, remember, depth + 1)]
                                   for k, v in value.items()]}


def memory_order(tensor) -> list[int] | None:
    """The dimensions in the order they lie in memory, when ``tensor`` is a transposed (permuted) view of
    one contiguous block; None when it is contiguous, or has gaps or overlaps (a slice, an expand).

    A tensor is sent as its bytes in memory order with this permutation, so the other side rebuilds the
    same strides: code that is right only for contiguous input (``.view`` after a transpose) fails in the
    judge as it fails in the student's kernel. Tensors with gaps arrive contiguous.
    """
    if tensor.dim() < 2 or tensor.is_contiguous():
        return None
    order = sorted(range(tensor.dim()), key=lambda d: (-tensor.stride(d), d))
    return order if tensor.permute(order).is_contiguous() else None


def _encode_tensor(tensor, remember=None, depth: int = 0):
    import torch

    plain = torch._C.TensorBase.detach(tensor)
    if plain.layout != torch.strided or plain.is_quantized or plain.device.type == "meta":
        raise WireError("only dense tensors can be sent")
    order = memory_order(plain)
    plain = plain.cpu() if order is None else plain.cpu().permute(order)
    plain = plain.contiguous()
    name = str(plain.dtype).removeprefix("torch.")
    if name not in _TENSOR_DTYPES:
        raise WireError(f"cannot send a tensor of dtype {name}")
    if name == "bfloat16":
        raw = plain.view(torch.int16).numpy().tobytes()
    else:
        raw = plain.numpy().tobytes()
    encoded = {"$": "tensor", "dtype": name, "shape": list(plain.shape), "data": base64.b64encode(raw).decode("ascii"),
               "grad": bool(tensor.requires_grad)}
    if order is not None:
        encoded["order"] = order
    device = device_of(tensor)
    if device != "cpu":
        encoded["device"] = device
    if type(tensor) is torch.nn.Parameter:
        encoded["parameter"] = True
    return encoded
