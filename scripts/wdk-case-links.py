#!/usr/bin/env python3
"""Makes a copy of the Windows kit headers usable on a case-sensitive file system.

The kit's headers name each other with inconsistent case (`#include <DriverSpecs.h>` for
`shared/driverspecs.h`). For every `#include` that does not resolve exactly in the header
root's km, km/crt, shared, um and ucrt folders but does resolve when case is ignored, this adds
a symbolic link with the spelling the include uses. Nothing is copied or changed otherwise.

Usage: scripts/wdk-case-links.py <header root>   (the folder holding km/ shared/ um/ ucrt/)
Used before `RVGPU_WDK_INCLUDE=<header root> cargo build -p rvgpu --features wdk-layout-check`
(docs/windows.md, "Layouts checked against Microsoft's headers").
"""
import os
import re
import sys


def main(root):
    dirs = [os.path.join(root, d) for d in ("km", "km/crt", "shared", "um", "ucrt")]
    dirs = [d for d in dirs if os.path.isdir(d)]
    by_lower = {}
    for d in dirs:
        for name in os.listdir(d):
            by_lower.setdefault(name.lower(), (d, name))
    include = re.compile(r'^\s*#\s*include\s*[<"]([^>"/\\]+)[>"]', re.M)
    wanted = set()
    for d in dirs:
        for name in os.listdir(d):
            path = os.path.join(d, name)
            if os.path.isfile(path):
                with open(path, errors="replace") as f:
                    wanted.update(include.findall(f.read()))
    made = 0
    for name in sorted(wanted):
        if any(os.path.exists(os.path.join(d, name)) for d in dirs):
            continue
        hit = by_lower.get(name.lower())
        if hit:
            os.symlink(hit[1], os.path.join(hit[0], name))
            made += 1
    print(f"{made} links added under {root}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
