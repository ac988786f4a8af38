#!/usr/bin/python3
"""Writes the seed corpus of the protocol fuzzers (tests/fuzz/corpus/*):
well-formed messages as real clients send them, from which libFuzzer
mutates. Rerun after changing it; the files are checked in.
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def frame(payload, seq):
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def lenenc(b):
    assert len(b) < 251
    return bytes([len(b)]) + b


def handshake(caps, user=b"root", token=b"", db=None, plugin=b"mysql_native_password", attrs=None):
    p = struct.pack("<IIB", caps, 1 << 24, 45) + b"\0" * 23 + user + b"\0"
    p += lenenc(token) if caps & (1 << 21) else bytes([len(token)]) + token
    if db is not None:
        p += db + b"\0"
    if plugin is not None:
        p += plugin + b"\0"
    if attrs is not None:
        body = b"".join(lenenc(k) + lenenc(v) for k, v in attrs)
        p += lenenc(body)
    return p


def execute(stmt_id, params, bound=True):
    body = struct.pack("<IBI", stmt_id, 0, 1)
    if params:
        bitmap = bytearray((len(params) + 7) // 8)
        for i, (_, v) in enumerate(params):
            if v is None:
                bitmap[i // 8] |= 1 << (i % 8)
        body += bytes(bitmap) + (b"\x01" if bound else b"\x00")
        if bound:
            body += b"".join(struct.pack("<H", t) for t, _ in params)
        body += b"".join(v for _, v in params if v is not None)
    return body


def compressed(payload, seq, deflate):
    data = zlib.compress(payload) if deflate else payload
    return struct.pack("<I", len(data))[:3] + bytes([seq]) + \
        struct.pack("<I", len(payload) if deflate else 0)[:3] + data


def main():
    PROTOCOL_41, SECURE, CONNECT_WITH_DB, PLUGIN_AUTH = 1 << 9, 1 << 15, 1 << 3, 1 << 19
    LENENC_DATA, CONNECT_ATTRS = 1 << 21, 1 << 20
    base = PROTOCOL_41 | SECURE | PLUGIN_AUTH | 1 | 4 | (1 << 13) | (1 << 16) | (1 << 17)
    token = bytes(range(1, 21))
    seeds = {
        "packet": {
            "query": b"\x20\x07" + frame(b"\x03SELECT 1", 0),
            "two": b"\x20\x03" + frame(b"\x0e", 0) + frame(b"\x03SELECT @@version", 0),
            "empty": b"\x01\x01" + frame(b"", 0),
            "too_large": b"\x00\x10" + b"\xff\x00\x00\x00" + b"x" * 40,
            "max_header": b"\xff\x05" + b"\xff\xff\xff\x00" + b"y" * 64,
        },
        "handshake": {
            "native": handshake(base, token=token),
            "with_db": handshake(base | CONNECT_WITH_DB, token=token, db=b"test"),
            "lenenc_attrs": handshake(base | LENENC_DATA | CONNECT_ATTRS, token=token,
                                      plugin=b"caching_sha2_password",
                                      attrs=[(b"_client_name", b"libmariadb"), (b"_pid", b"42")]),
            "no_password": handshake(base, token=b""),
            "old_client": struct.pack("<IIB", 1, 1 << 24, 8) + b"\0" * 23 + b"u\0",
        },
        "stmt_execute": {
            "three": bytes([3]) + execute(1, [(8, struct.pack("<q", -5)), (253, lenenc(b"it's")),
                                              (5, struct.pack("<d", 1.5))]),
            "nulls": bytes([2]) + execute(7, [(3, None), (253, None)]),
            "unbound": bytes([2]) + execute(1, [(8, struct.pack("<q", 1)), (1, b"\x02")], bound=False),
            "unsigned": bytes([1]) + execute(1, [(0x8008, struct.pack("<Q", 2**64 - 1))]),
            "datetime": bytes([2]) + execute(1, [(12, bytes([11]) + struct.pack("<HBBBBBI", 2024, 1, 31, 10, 20, 30, 4)),
                                                 (11, bytes([8, 1]) + struct.pack("<IBBB", 1, 1, 0, 1))]),
            "decimal": bytes([1]) + execute(1, [(246, lenenc(b"-12.50"))]),
            "none": bytes([0]) + execute(3, []),
        },
        "compressed": {
            "stored": b"\x08" + compressed(frame(b"\x03SELECT 1", 0), 0, False),
            "deflated": b"\x10" + compressed(frame(b"\x03SELECT '" + b"a" * 200 + b"'", 0), 0, True),
            "two": b"\x40" + compressed(b"x" * 10, 0, False) + compressed(b"y" * 300, 1, True),
        },
    }
    for fuzzer, files in seeds.items():
        d = os.path.join(HERE, "corpus", fuzzer)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
