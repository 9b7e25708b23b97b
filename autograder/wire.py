"""The values that cross between the judge and the student's kernel, and how they are written.

One JSON object per message, on one line. Values are encoded as plain JSON where JSON can hold them,
and as tagged objects otherwise:

* ``{"$": "tensor", "dtype": "float32", "shape": [2, 3], "data": "<base64>", "grad": false}``
* ``{"$": "ndarray", "dtype": "<f8", "shape": [...], "data": "<base64>"}``
* ``{"$": "float", "v": "inf"}`` (NaN and the infinities, which JSON lacks)
* ``{"$": "bytes", "data": "<base64>"}``, ``{"$": "tuple", "items": [...]}``,
  ``{"$": "dict", "items": [[key, value], ...]}`` (keys: str, int, float, bool, None, tuples of them)
* ``{"$": "dtype", "name": "float64"}``, ``{"$": "generator", "state": "<base64>"}``
* ``{"$": "ref", "id": 7}``: an object that stays where it lives (a module, an iterator...)
* ``{"$": "global", "name": "cross_entropy"}``: a name in the student's namespace (judge to kernel only)

``decode`` is the judge's side: it trusts nothing. It checks every tag, type, size and depth and
raises ``WireError`` on anything else, so a forged or malformed message is that submission's error,
never the grader's. It builds only plain tensors, arrays and Python data (no pickle, ever).
"""

from __future__ import annotations

import base64
import math

MAX_MESSAGE_BYTES = 64 * 1024 * 1024   # one message on the wire
MAX_DEPTH = 20                         # nesting of lists/dicts
MAX_ITEMS = 100_000                    # elements of one list/dict
MAX_ELEMENTS = 16 * 1024 * 1024        # elements of one tensor/array

_TENSOR_DTYPES = {
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "uint8", "int8", "int16", "int32", "int64", "bool",
}


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
    import numpy as np
    import torch

    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if isinstance(value, Ref):
        return {"$": "global", "name": value.id} if isinstance(value.id, str) else {"$": "ref", "id": value.id}
    if isinstance(value, torch.Tensor):
        return _encode_tensor(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise WireError(f"cannot send a NumPy array of dtype {value.dtype}")
        array = np.ascontiguousarray(value)
        return {"$": "ndarray", "dtype": array.dtype.str, "shape": list(array.shape),
                "data": base64.b64encode(array.tobytes()).decode("ascii")}
    if isinstance(value, np.generic):
        return encode(value.item(), remember, depth + 1)
    if isinstance(value, bytes):
        return {"$": "bytes", "data": base64.b64encode(value).decode("ascii")}
    if isinstance(value, torch.dtype):
        return {"$": "dtype", "name": str(value).removeprefix("torch.")}
    if isinstance(value, torch.Generator):
        return {"$": "generator", "state": base64.b64encode(value.get_state().numpy().tobytes()).decode("ascii")}
    if isinstance(value, torch.Size):
        return {"$": "tuple", "items": [int(v) for v in value]}
    if type(value) is list:
        return [encode(v, remember, depth + 1) for v in value]
    if type(value) is tuple or (isinstance(value, tuple) and hasattr(value, "_fields")):
        return {"$": "tuple", "items": [encode(v, remember, depth + 1) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, (str, int, float, bool, type(None), tuple)) for k in value):
        return {"$": "dict", "items": [[encode(k, remember, depth + 1), encode(v, remember, depth + 1)]
                                       for k, v in value.items()]}
    if remember is not None:
        return {"$": "ref", "id": remember(value)}
    raise WireError(f"cannot send a {type(value).__name__} by value")


def _encode_tensor(tensor):
    import torch

    plain = torch._C.TensorBase.detach(tensor)
    if plain.layout != torch.strided or plain.is_quantized or plain.device.type == "meta":
        raise WireError("only dense tensors can be sent")
    plain = plain.cpu().contiguous()
    name = str(plain.dtype).removeprefix("torch.")
    if name not in _TENSOR_DTYPES:
        raise WireError(f"cannot send a tensor of dtype {name}")
    if name == "bfloat16":
        raw = plain.view(torch.int16).numpy().tobytes()
    else:
        raw = plain.numpy().tobytes()
    return {"$": "tensor", "dtype": name, "shape": list(plain.shape), "data": base64.b64encode(raw).decode("ascii"),
            "grad": bool(tensor.requires_grad)}


# ----------------------------------------------------------------------------------------------
# Decoding. ``resolve`` maps a ref id to an object (kernel side) or wraps it (judge side).


def decode(value, resolve=None, depth: int = 0, resolve_global=None):
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        return value
    if kind is float:
        return value
    if kind is list:
        if len(value) > MAX_ITEMS:
            raise WireError("list too long")
        return [decode(v, resolve, depth + 1, resolve_global) for v in value]
    if kind is not dict:
        raise WireError(f"unexpected JSON value of type {kind.__name__}")
    tag = value.get("$")
    if tag == "float":
        text = value.get("v")
        if text not in ("inf", "-inf", "nan"):
            raise WireError("bad float")
        return float(text)
    if tag == "tuple":
        items = _list(value, "items")
        return tuple(decode(v, resolve, depth + 1, resolve_global) for v in items)
    if tag == "dict":
        out = {}
        for pair in _list(value, "items"):
            if type(pair) is not list or len(pair) != 2:
                raise WireError("bad dict item")
            key = decode(pair[0], resolve, depth + 1, resolve_global)
            if not isinstance(key, (str, int, float, bool, type(None), tuple)):
                raise WireError("bad dict key")
            out[key] = decode(pair[1], resolve, depth + 1, resolve_global)
        return out
    if tag == "bytes":
        return _b64(value.get("data"))
    if tag == "tensor":
        return _decode_tensor(value)
    if tag == "ndarray":
        return _decode_ndarray(value)
    if tag == "dtype":
        import torch

        name = value.get("name")
        if name not in _TENSOR_DTYPES:
            raise WireError("bad dtype")
        return getattr(torch, name)
    if tag == "generator":
        import torch

        state = torch.frombuffer(bytearray(_b64(value.get("state"))), dtype=torch.uint8)
        generator = torch.Generator()
        try:
            generator.set_state(state.clone())
        except RuntimeError as error:
            raise WireError(f"bad generator state: {error}") from None
        return generator
    if tag == "global":
        name = value.get("name")
        if type(name) is not str or resolve_global is None:
            raise WireError("bad global name")
        return resolve_global(name)
    if tag == "ref":
        ident = value.get("id")
        if type(ident) is not int or resolve is None:
            raise WireError("bad reference")
        return resolve(ident)
    raise WireError(f"unknown tag {tag!r}")


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


def _decode_tensor(value: dict):
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
    if value.get("grad") is True and tensor.is_floating_point():
        tensor.requires_grad_(True)
    return tensor


def _decode_ndarray(value: dict):
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
