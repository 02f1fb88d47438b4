"""Opens a `cxrlake report` page in headless Chromium, offline, and checks its screenshot.

Usage: report_screenshot.py INDEX_HTML SCREENSHOT_PNG

Chromium (Debian package `chromium`, installed by scripts/test) renders file://INDEX_HTML with
networking off (no QUIC, no background requests, a fresh profile) into SCREENSHOT_PNG; the PNG
must decode (a small zlib decoder below, no imaging package needed), be 1280 pixels wide and
show more than one colour. Prints "report screenshot ok".
"""

import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"


def fail(message):
    sys.exit(f"FAIL: {message}")


def screenshot(index, out):
    browser = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if browser is None:
        fail("chromium is not installed (scripts/test installs it: apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as profile:
        command = [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={out}",
            "--window-size=1280,2000", index.resolve().as_uri(),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if not out.exists() or out.stat().st_size == 0:
        fail(f"no screenshot from chromium (exit {done.returncode}):\n{done.stderr[-2000:]}")


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode_png(data):
    """(width, height, rows of bytes) of an 8-bit, non-interlaced RGB or RGBA PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("the screenshot is not a PNG")
    pos, chunks, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        fail(f"unexpected PNG format: depth {depth}, colour type {colour}, interlace {interlace}")
    channels = 3 if colour == 2 else 4
    raw, stride, rows, previous = zlib.decompress(b"".join(chunks)), width * channels, [], None
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        up = previous or bytearray(stride)
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            upper_left = up[x - channels] if x >= channels else 0
            predictor = (0, left, up[x], (left + up[x]) // 2, paeth(left, up[x], upper_left))[kind]
            line[x] = (line[x] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def main():
    index, out = Path(sys.argv[1]), Path(sys.argv[2])
    screenshot(index, out)
    width, height, channels, rows = decode_png(out.read_bytes())
    if width != 1280 or height < 100:
        fail(f"screenshot is {width} x {height}")
    colours = set()
    for row in rows[::8]:
        for x in range(0, width * channels, channels * 8):
            colours.add(row[x:x + 3])
    if len(colours) < 2:
        fail("the screenshot is a single colour")
    print(f"{width} x {height} pixels, {len(colours)} colours sampled")
    print("report screenshot ok")


if __name__ == "__main__":
    main()
