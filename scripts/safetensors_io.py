"""Minimal safetensors reader and writer (F32, F64, I32, I64), with strict header validation.

Format: an 8-byte little-endian unsigned header length N, N bytes of JSON header
`{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}`
(possibly padded with spaces), then the raw little-endian tensor data. Offsets are relative to
the start of the data section; the tensors cover it exactly, in order, without gaps or overlaps.
"""

import json
import struct

import numpy as np
import torch

# safetensors dtype name -> (little-endian numpy dtype, torch dtype)
DTYPES = {
    "F32": (np.dtype("<f4"), torch.float32),
    "F64": (np.dtype("<f8"), torch.float64),
    "I32": (np.dtype("<i4"), torch.int32),
    "I64": (np.dtype("<i8"), torch.int64),
}
TORCH_TO_NAME = {torch_dtype: name for name, (_, torch_dtype) in DTYPES.items()}

HEADER_LIMIT = 100 * 1024 * 1024  # refuse absurd header lengths (corrupt files)


class SafetensorsError(ValueError):
    """A file that is not valid safetensors, or a tensor that cannot be written."""


def _parse_header(path, header_bytes, data_size):
    try:
        header = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{path}: header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")

    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise SafetensorsError(f"{path}: __metadata__ must map strings to strings")

    entries = []
    for name, info in header.items():
        where = f"{path}: tensor '{name}'"
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError(f"{where}: needs exactly dtype, shape and data_offsets")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in DTYPES:
            raise SafetensorsError(
                f"{where}: unsupported dtype {dtype!r} (supported: {', '.join(DTYPES)})"
            )
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
        ):
            raise SafetensorsError(f"{where}: shape must be a list of non-negative integers")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        ):
            raise SafetensorsError(f"{where}: data_offsets must be two integers")
        begin, end = offsets
        if not 0 <= begin <= end <= data_size:
            raise SafetensorsError(
                f"{where}: data_offsets [{begin}, {end}] out of range (data section is "
                f"{data_size} bytes)"
            )
        expected = int(np.prod(shape, dtype=np.int64)) * DTYPES[dtype][0].itemsize
        if end - begin != expected:
            raise SafetensorsError(
                f"{where}: data_offsets span {end - begin} bytes but shape {shape} of {dtype} "
                f"needs {expected}"
            )
        entries.append((begin, end, name, dtype, shape))

    # The tensors must tile the data section exactly: no gaps, no overlaps, nothing left over.
    position = 0
    for begin, end, name, _, _ in sorted(entries):
        if begin != position:
            raise SafetensorsError(
                f"{path}: tensor '{name}' starts at byte {begin}, expected {position} "
                "(gap or overlap in the data section)"
            )
        position = end
    if position != data_size:
        raise SafetensorsError(
            f"{path}: tensors cover {position} bytes but the data section has {data_size}"
        )
    return entries, metadata


def load(path):
    """Reads a safetensors file: returns ({name: torch.Tensor}, {key: value} metadata)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise SafetensorsError(f"{path}: file too short for the 8-byte header length")
    (header_len,) = struct.unpack("<Q", blob[:8])
    if header_len > min(len(blob) - 8, HEADER_LIMIT):
        raise SafetensorsError(
            f"{path}: header length {header_len} exceeds the file ({len(blob)} bytes)"
        )
    data = memoryview(blob)[8 + header_len :]
    entries, metadata = _parse_header(path, blob[8 : 8 + header_len], len(data))

    tensors = {}
    for begin, end, name, dtype, shape in entries:  # in header order
        np_dtype = DTYPES[dtype][0]
        array = np.frombuffer(data[begin:end], dtype=np_dtype).reshape(shape)
        tensors[name] = torch.from_numpy(array.astype(np_dtype.newbyteorder("="), copy=True))
    return tensors, metadata


def save(path, tensors, metadata=None):
    """Writes {name: torch.Tensor} (F32, F64, I32 or I64) and string metadata to `path`."""
    header = {}
    chunks = []
    offset = 0
    for name, tensor in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise SafetensorsError(f"invalid tensor name {name!r}")
        if tensor.dtype not in TORCH_TO_NAME:
            raise SafetensorsError(f"tensor '{name}': unsupported dtype {tensor.dtype}")
        dtype = TORCH_TO_NAME[tensor.dtype]
        raw = tensor.detach().cpu().contiguous().numpy().astype(DTYPES[dtype][0]).tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise SafetensorsError("metadata must map strings to strings")
        header["__metadata__"] = dict(metadata)

    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)  # align the data section to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        for raw in chunks:
            f.write(raw)
