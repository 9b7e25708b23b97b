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

``decode`` is the judge's side: it trusts nothing. It checks every tag, type, size and depth and
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
import re

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


def _encode_tensor(tensor, remember=None, depth: int = 0):
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
    encoded = {"$": "tensor", "dtype": name, "shape": list(plain.shape), "data": base64.b64encode(raw).decode("ascii"),
               "grad": bool(tensor.requires_grad)}
    device = device_of(tensor)
    if device != "cpu":
        encoded["device"] = device
    if type(tensor) is torch.nn.Parameter:
        encoded["parameter"] = True
    return encoded


# ----------------------------------------------------------------------------------------------
# Decoding. ``resolve`` maps a ref id to an object (kernel side) or wraps it (judge side).


def decode(value, resolve=None, depth: int = 0, resolve_global=None, *, restore_devices: bool = False):
    """The value an encoded message stands for. ``restore_devices`` (the student's side): a tensor sent
    from another device goes back to it when this process has that device; otherwise (the judge) it
    stays on the CPU with its device recorded (``device_of``)."""
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
