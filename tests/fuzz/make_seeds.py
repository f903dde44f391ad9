"""Writes the seed corpus of fuzz_data_loaders.cpp: small valid IDX files of every element
type, raw and gzipped, and small valid MNIST splits, each behind the mode byte the fuzz
target reads (bit 0: gzip names, bit 1: MNIST with a 2-byte images length).

Usage: python3 tests/fuzz/make_seeds.py OUT_DIR
"""

import gzip
import struct
import sys
from pathlib import Path

TYPES = {0x08: ("B", 1), 0x09: ("b", 1), 0x0B: (">h", 2), 0x0C: (">i", 4), 0x0D: (">f", 4), 0x0E: (">d", 8)}


def idx(type_byte, extents, values):
    fmt, _ = TYPES[type_byte]
    data = b"".join(struct.pack(fmt, v) for v in values)
    return bytes([0, 0, type_byte, len(extents)]) + b"".join(struct.pack(">I", e) for e in extents) + data


def compress(content):
    return gzip.compress(content, mtime=0)  # the same bytes every run


def seeds():
    for type_byte in TYPES:
        values = [0, 1, 2, 3, 4, 5] if TYPES[type_byte][0] not in (">f", ">d") else [0.5, -1.0, 2.0, 3.25, 0, 1e3]
        one = idx(type_byte, [2, 3], values)
        yield f"idx-{type_byte:02x}", bytes([0]) + one
        yield f"idx-{type_byte:02x}-gz", bytes([1]) + compress(one)
    yield "idx-empty", bytes([0]) + idx(0x08, [0, 28, 28], [])
    yield "idx-4d", bytes([0]) + idx(0x08, [1, 2, 2, 2], list(range(8)))
    images = idx(0x08, [3, 4, 4], [i * 5 for i in range(48)])
    labels = idx(0x08, [3], [0, 9, 4])
    yield "mnist", bytes([2]) + struct.pack(">H", len(images)) + images + labels
    gz_images, gz_labels = compress(images), compress(labels)
    yield "mnist-gz", bytes([3]) + struct.pack(">H", len(gz_images)) + gz_images + gz_labels


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, content in seeds():
        (out / name).write_bytes(content)


if __name__ == "__main__":
    main()
