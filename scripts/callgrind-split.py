#!/usr/bin/env python3
"""Splits the instructions of one callgrind profile into driver, emulated device and simulated OS
(docs/performance.md describes the method).

The profile is one run with collection toggled on a driver entry point (`--toggle-collect`), so
it holds only instructions executed inside that entry point. Callgrind records, for every call
edge, the inclusive cost of the callee as called from that caller. The script sums the edges
that cross a boundary, from code that is not itself behind a boundary:

- device: the simulation's MMIO accessors (`SimKernel`'s `Platform::mmio_*`: on Windows a single
  `mov` to the BAR; here the trap-window lookup `kernel::resolve`/`trap` and the device model
  behind `WeakBus`; the accessors themselves are inlined into the driver, so their few
  instructions of glue stay in the driver's share), and
  the UMD's doorbell store (`DoorbellCpuState::ring`: one posted write on hardware);
- os: the Dxgkrnl callbacks the driver calls through DXGKRNL_INTERFACE
  (`rvgpu_simos::dxgkrnl::callbacks::*`) and the simulated thunks (`rvgpu_simos::kmt::*`), minus
  what they call back into the driver (e.g. the routine `DxgkCbSynchronizeExecution` runs, or
  the DDI a thunk calls);
- platform: the rest of the simulated kernel seam (`SimKernel`'s IRQL, pool, debug print).

driver = total - device - os - platform: the KMD's (or UMD's) own code, with what it inlines
and the library code it calls.

Usage: callgrind-split.py FILE ROOT [--within] (ROOT: a regular expression matching the toggled
function's name) -> prints "total=<Ir> driver=<Ir> device=<Ir> os=<Ir> platform=<Ir>".
--within: ROOT is a function called inside the toggled one (e.g. the KMD's DDI inside a thunk);
the total is then ROOT's inclusive cost (the edges into it), and the split is of that, so one
profile gives both figures.
"""

import re
import sys

# The Platform impl's methods demangle as `<SimKernel as Platform>::f` or, named by the module
# holding the impl, `<impl Platform for SimKernel>::f`.
DEVICE = re.compile(
    r"SimKernel as rvgpu_kmd::platform::Platform>::mmio_"
    r"|Platform for rvgpu_simos::adapter::kernel::SimKernel>::mmio_"
    r"|^rvgpu_simos::dxgkrnl::kernel::(resolve|trap)$"
    r"|^<rvgpu_simos::dxgkrnl::kernel::WeakBus as rvgpu_hw::mmio::MmioBus>::"
    r"|DoorbellCpuState::ring$"
)
OS = re.compile(
    r"^rvgpu_simos::dxgkrnl::callbacks::"
    r"|^(<)?rvgpu_simos::kmt::"
)
PLATFORM = re.compile(
    r"SimKernel as rvgpu_kmd::platform::Platform>::"
    r"|Platform for rvgpu_simos::adapter::kernel::SimKernel>::"
)
SIMOS = re.compile(r"^(<)?rvgpu_simos::")
# Driver code a callback or thunk calls back into (subtracted from the OS share).
DRIVER = re.compile(r"^(<)?(rvgpu_kmd|rvgpu_ddi|rvgpu_hw|rvgpu_umd)::|^<rvgpu_kmd::")


def classify(name):
    if DEVICE.search(name):
        return "device"
    if PLATFORM.search(name):
        return "platform"
    if OS.search(name):
        return "os"
    return None


def parse(path):
    names = {}
    cur = None
    callee = None
    pending_call = False
    total = None
    edges = {}  # (caller, callee) -> inclusive Ir
    self_cost = {}

    def name_of(value):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), value)

    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("fn="):
                cur = name_of(line[3:])
                continue
            if line.startswith("cfn="):
                callee = name_of(line[4:])
                continue
            if line.startswith("calls="):
                pending_call = True
                continue
            if line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split()[1])
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            parts = line.split()
            cost = int(parts[1]) if len(parts) > 1 else 0
            if pending_call:
                edges[(cur, callee)] = edges.get((cur, callee), 0) + cost
                pending_call = False
            else:
                self_cost[cur] = self_cost.get(cur, 0) + cost
    if total is None:
        total = sum(self_cost.values())
    return total, edges


def below_root(edges, root):
    """Functions called (transitively) from the toggled entry point, without its callers: an
    edge from a caller of the entry point carries the entry point's whole cost."""
    down, up = {}, {}
    for (caller, callee), cost in edges.items():
        if cost > 0:
            down.setdefault(caller, set()).add(callee)
            up.setdefault(callee, set()).add(caller)

    def reach(start, graph):
        seen, todo = set(), list(start)
        while todo:
            f = todo.pop()
            if f in seen:
                continue
            seen.add(f)
            todo.extend(graph.get(f, ()))
        return seen

    roots = {f for f in set(down) | set(up) if f and root.search(f)}
    above = reach([c for r in roots for c in up.get(r, ())], up) - roots
    return (reach(roots, down) - above) | roots


def split(path, root, within=False):
    total, edges = parse(path)
    root = re.compile(root)
    inside = below_root(edges, root)
    if within:
        # ROOT's inclusive cost: the edges into it from outside it (recursion counted once).
        total = sum(
            cost
            for (caller, callee), cost in edges.items()
            if callee and root.search(callee) and not (caller and root.search(caller))
        )
    share = {"device": 0, "os": 0, "platform": 0}
    for (caller, callee), cost in edges.items():
        if caller not in inside:
            continue
        c_callee = classify(callee or "")
        c_caller = classify(caller or "")
        if c_callee and not c_caller:
            share[c_callee] += cost
        # The OS calling back into the driver (a callback's or thunk's own helpers included):
        # driver work, not the OS's.
        if (
            c_caller in ("os", None)
            and SIMOS.search(caller or "")
            and not c_callee
            and DRIVER.search(callee or "")
        ):
            share["os"] -= cost
    driver = total - sum(share.values())
    return total, driver, share


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--within"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    total, driver, share = split(sys.argv[1], sys.argv[2], len(sys.argv) == 4)
    print(
        f"total={total} driver={driver} device={share['device']} os={share['os']} "
        f"platform={share['platform']}"
    )


if __name__ == "__main__":
    main()
