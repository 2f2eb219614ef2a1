"""Just enough PNG decoding (8-bit RGB/RGBA, no interlace) to tell a drawn chart from a blank image."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass
class Image:
    width: int
    height: int
    channels: int
    pixels: bytes  # unfiltered rows, `channels` bytes per pixel

    def inked_share(self, threshold: int = 235) -> float:
        """Share of pixels that are not (near) white."""
        inked = 0
        step = self.channels
        data = self.pixels
        for i in range(0, len(data), step * 7):  # every 7th pixel is plenty to measure
            if min(data[i], data[i + 1], data[i + 2]) < threshold:
                inked += 1
        return inked / (len(data) // (step * 7))

    def distinct_colors(self) -> int:
        step = self.channels
        return len({self.pixels[i : i + 3] for i in range(0, len(self.pixels), step * 13)})


def decode(data: bytes) -> Image:
    assert data[:8] == SIGNATURE, "not a PNG"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    out = bytearray(height * stride)
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for x in range(channels, stride):
                row[x] = (row[x] + row[x - channels]) & 0xFF
        elif kind == 2:
            for x in range(stride):
                row[x] = (row[x] + previous[x]) & 0xFF
        elif kind == 3:
            for x in range(stride):
                left = row[x - channels] if x >= channels else 0
                row[x] = (row[x] + ((left + previous[x]) >> 1)) & 0xFF
        elif kind == 4:
            for x in range(stride):
                a = row[x - channels] if x >= channels else 0
                b = previous[x]
                c = previous[x - channels] if x >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[x] = (row[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        out[y * stride : (y + 1) * stride] = row
        previous = row
    return Image(width, height, channels, bytes(out))
