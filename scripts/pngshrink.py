#!/usr/bin/env python3
"""Recompress a PNG's image data with zlib level 9, standard library only
(`treercu` compresses its own plots; this is for PNGs stored uncompressed).
Usage: scripts/pngshrink.py IN.png [OUT.png]   (OUT defaults to IN)."""
import struct
import sys
import zlib


def chunks(data):
    pos = 8
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        yield kind, data[pos + 8:pos + 8 + n]
        pos += 12 + n


def chunk(kind, body):
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def main():
    src = sys.argv[1]
    dst = sys.argv[2] if len(sys.argv) > 2 else src
    data = open(src, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{src}: not a PNG")
    out, idat = [data[:8]], b""
    for kind, body in chunks(data):
        if kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            out.append(chunk(b"IDAT", zlib.compress(zlib.decompress(idat), 9)))
            out.append(chunk(b"IEND", b""))
        else:
            out.append(chunk(kind, body))
    open(dst, "wb").write(b"".join(out))


if __name__ == "__main__":
    main()
