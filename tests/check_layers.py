#!/usr/bin/env python3
"""Holds src/'s includes to the layer table in src/README.md.

Each file under src/<folder>/ may include, by bare name, a header of its
own folder; by path ("base/error.h"), a header of a folder its layer
lists; and ssmjit.h or the generated kernels_embedded.h.  Prints every
include that breaks this and exits 1 if there is one.  --self-test
checks that a tree with a wrong-way include is caught."""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
TOP = {"ssmjit.h", "kernels_embedded.h", "ssmjit_internal.h"}


def read_rules(readme):
    text = open(readme).read()
    m = re.search(r"```layers\n(.*?)```", text, re.S)
    if not m:
        sys.exit(f"{readme}: no ```layers block")
    rules = {}
    for line in m.group(1).splitlines():
        if line.strip():
            room, _, below = line.partition(":")
            rules[room.strip()] = set(below.split())
    return rules


def check(src):
    rules = read_rules(os.path.join(src, "README.md"))
    bad = []
    for room in sorted(os.listdir(src)):
        folder = os.path.join(src, room)
        if not os.path.isdir(folder):
            continue
        if room not in rules:
            bad.append(f"src/{room}/: a folder the layer table does not name")
            continue
        for name in sorted(os.listdir(folder)):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(folder, name)
            for inc in INCLUDE.findall(open(path).read()):
                where = f"src/{room}/{name}: #include \"{inc}\""
                if inc in TOP:
                    if inc == "ssmjit_internal.h":
                        bad.append(f"{where}: the tools' header is not for the library")
                    continue
                if "/" not in inc:
                    if not os.path.exists(os.path.join(folder, inc)):
                        bad.append(f"{where}: not in {room}/ (include other folders by path)")
                    continue
                to = inc.split("/")[0]
                if to == room:
                    bad.append(f"{where}: its own folder, by bare name")
                elif to not in rules:
                    bad.append(f"{where}: no folder {to}/ in the layer table")
                elif to not in rules[room]:
                    bad.append(f"{where}: {room}/ may not include {to}/ (src/README.md)")
                elif not os.path.exists(os.path.join(src, inc)):
                    bad.append(f"{where}: no such file")
    return bad


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        for room in ("base", "ops"):
            os.makedirs(os.path.join(src, room))
        open(os.path.join(src, "README.md"), "w").write("```layers\nbase:\nops: base\n```\n")
        open(os.path.join(src, "base", "a.h"), "w").write('#include "ops/b.h"\n')
        open(os.path.join(src, "ops", "b.h"), "w").write('#include "base/a.h"\n')
        bad = check(src)
        if len(bad) != 1 or "base/ may not include ops/" not in bad[0]:
            sys.exit(f"self-test: a wrong-way include was not caught: {bad}")


def main():
    src = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--self-test" else None
    if "--self-test" in sys.argv:
        self_test()
    if src:
        bad = check(src)
        for line in bad:
            print(line)
        if bad:
            return 1
        print(f"{src}: every include goes down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
