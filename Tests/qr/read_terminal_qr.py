# SPDX-License-Identifier: Apache-2.0
"""Reads a QR code drawn in Unicode half blocks (the file argv[1]: one drawing, lines of ' ', '▀',
'▄', '█'; a drawn half is a light module, as on a terminal with a dark background) with the zbar
library (libzbar.so.0, through ctypes) and prints what it encodes; exits 1 if zbar finds none."""
import ctypes, sys

drawing = open(sys.argv[1], encoding="utf-8").read()
rows = []
for line in drawing.split("\n"):
    if not line:
        continue
    if not set(line) <= set(" \u2580\u2584\u2588"):
        sys.exit(f"not a half-block drawing: {line!r}")
    rows.append([c in "\u2588\u2580" for c in line])
    rows.append([c in "\u2588\u2584" for c in line])

scale = 4  # pixels per module: zbar wants more than one
pixels = bytearray()
for row in rows:
    line = b"".join(bytes([255 if light else 0]) * scale for light in row)
    pixels += line * scale
width, height = len(rows[0]) * scale, len(rows) * scale

zbar = ctypes.CDLL("libzbar.so.0")
zbar.zbar_image_scanner_create.restype = ctypes.c_void_p
zbar.zbar_image_scanner_set_config.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
zbar.zbar_image_create.restype = ctypes.c_void_p
zbar.zbar_image_set_format.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
zbar.zbar_image_set_size.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
zbar.zbar_image_set_data.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p]
zbar.zbar_scan_image.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
zbar.zbar_image_first_symbol.argtypes = [ctypes.c_void_p]
zbar.zbar_image_first_symbol.restype = ctypes.c_void_p
zbar.zbar_symbol_get_data.argtypes = [ctypes.c_void_p]
zbar.zbar_symbol_get_data.restype = ctypes.c_char_p

scanner = zbar.zbar_image_scanner_create()
zbar.zbar_image_scanner_set_config(scanner, 0, 0, 1)  # every symbology, ZBAR_CFG_ENABLE
image = zbar.zbar_image_create()
zbar.zbar_image_set_format(image, ord("Y") | ord("8") << 8 | ord("0") << 16 | ord("0") << 24)  # 8-bit grey
zbar.zbar_image_set_size(image, width, height)
data = ctypes.create_string_buffer(bytes(pixels), len(pixels))
zbar.zbar_image_set_data(image, data, len(pixels), None)
if zbar.zbar_scan_image(scanner, image) < 1:
    sys.exit(1)
sys.stdout.write(zbar.zbar_symbol_get_data(zbar.zbar_image_first_symbol(image)).decode())
