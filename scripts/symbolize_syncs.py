#!/usr/bin/env python3
"""Names the lines behind the host syncs that `mrcnn-engine --task benchmark --count-syncs
FILE.json` counted on a GPU: each call stack's frames (module + offset, as the engine kept
them) through addr2line on the same binaries, which stay on the machine that built them (the
GPU machine gets a stripped bundle). Prints, per call stack (most frequent first), its count,
the first frames in the project's own code (file:line and function) and the LibTorch
operator it went through.

    scripts/symbolize_syncs.py FILE.json [--build build-gpu] [--all-frames]

--build: the build folder of the bundle that ran (its bin/ holds mrcnn-engine). Frames in
modules that are not found there (LibTorch's, the CUDA runtime's) keep the name the engine's
dynamic-symbol lookup gave them.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRAME = re.compile(r"^(?P<module>[^+\s]+)\+0x(?P<offset>[0-9a-f]+)(?: (?P<symbol>.*))?$")


def find_module(build, name):
    for sub in ("bin", "tests", "lib", ""):
        path = os.path.join(build, sub, name)
        if os.path.isfile(path):
            return path
    return None


def addr2line(binary, offsets):
    """{offset: [(function, file:line), ...]} (inlined frames first), through addr2line."""
    # A return address is the instruction after the call: look one byte back.
    args = ["addr2line", "-f", "-C", "-i", "-a", "-e", binary] + ["0x%x" % (o - 1) for o in offsets]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
    result, current = {}, None
    i = 0
    while i < len(out):
        line = out[i]
        if line.startswith("0x") and " " not in line:
            current = int(line, 16) + 1
            result[current] = []
            i += 1
            continue
        function = line
        where = out[i + 1] if i + 1 < len(out) else "??:0"
        result[current].append((function, where))
        i += 2
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("syncs", help="the file --count-syncs wrote")
    ap.add_argument("--build", default=os.path.join(ROOT, "build-gpu"),
                    help="the build folder whose binaries ran (default: build-gpu)")
    ap.add_argument("--all-frames", action="store_true", help="every frame, not only the project's")
    args = ap.parse_args()
    data = json.load(open(args.syncs))
    syncs = data["syncs"]
    wanted = defaultdict(set)
    parsed = []
    for site in syncs["sites"]:
        frames = []
        for text in site["frames"]:
            m = FRAME.match(text)
            frames.append((m.group("module"), int(m.group("offset"), 16), m.group("symbol")) if m else (text, 0, None))
            if m:
                wanted[m.group("module")].add(int(m.group("offset"), 16))
        parsed.append((site["count"], frames))
    names = {}
    missing = []
    for module, offsets in wanted.items():
        binary = find_module(args.build, module)
        if binary is None:
            missing.append(module)
            continue
        for offset, lines in addr2line(binary, sorted(offsets)).items():
            names[(module, offset)] = lines
    print("%s: %d host syncs in one %s step (batch %s, %s, %s), %d call stacks" %
          (args.syncs, syncs["total"], data.get("mode"), data.get("batch"), data.get("precision"),
           data.get("device"), len(syncs["sites"])))
    if missing:
        print("not symbolised here (not in %s): %s" % (args.build, ", ".join(sorted(missing))))
    for count, frames in parsed:
        print("\n%4d x" % count)
        shown = 0
        operator = None
        for module, offset, symbol in frames:
            lines = names.get((module, offset))
            if lines:
                for function, where in lines:
                    ours = ROOT in where or where.startswith(("engine/", "dataset/"))
                    if ours or args.all_frames:
                        print("       %s  %s" % (os.path.relpath(where.split(" ")[0], ROOT) if ROOT in where else where, function))
                        shown += 1
            elif args.all_frames:
                print("       %s+0x%x  %s" % (module, offset, symbol or "?"))
            if symbol and operator is None and ("at::_ops::" in symbol or "at::native::" in symbol):
                operator = symbol
        if operator:
            print("       through %s" % operator)
        if shown == 0 and not args.all_frames:
            print("       (no frame in the project's code; --all-frames shows them all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
