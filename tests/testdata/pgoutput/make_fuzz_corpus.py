#!/usr/bin/env python3
"""Writes the seed corpus of pgoutput_decoder_fuzz into DIR.

One file per transaction (and per message outside one) of the captured
*.txt files here (big.txt aside: libFuzzer's inputs are small), each the
Relation and Type messages seen so far and then the transaction's messages,
every message framed as the fuzz target reads it: a 2-byte big-endian
length, then the bytes.

Usage: make_fuzz_corpus.py DIR
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ["all.txt", "outbox_inserts.txt", "messages.txt"]


def frame(message):
    return len(message).to_bytes(2, "big") + message


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    count = 0
    for name in FILES:
        schema = {}  # (type, oid) -> latest R or Y message
        group = []
        with open(os.path.join(HERE, name)) as f:
            for line in f:
                message = bytes.fromhex(line.split()[1])
                kind = chr(message[0])
                if kind in "RY":
                    schema[(kind, message[1:5])] = message
                    continue
                group.append(message)
                if kind == "B":
                    continue
                if kind == "M" and len(group) == 1 and message[1] & 1 == 0:
                    pass  # a non-transactional message stands alone
                elif kind != "C":
                    continue
                seed = b"".join(frame(m) for m in schema.values())
                seed += b"".join(frame(m) for m in group)
                path = os.path.join(out, "%s-%03d" % (name[:-4], count))
                with open(path, "wb") as seed_file:
                    seed_file.write(seed)
                count += 1
                group = []
    print("%d seeds in %s" % (count, out))


if __name__ == "__main__":
    main()
