#!/usr/bin/python3
"""make-platform.py MACHINE_FILE --nodes N [--ppn K] -o PLATFORM.xml [--hostfile F] [--cfg-file C]

Turns a machine description (machines/*.machine, format: docs/machines.md) into a SimGrid
3.32 platform for SMPI, a hostfile placing K ranks on each of the first N hosts (rank r on node r / K), and the
smpirun --cfg flags the description implies (printed on standard output, one line, and written to --cfg-file).

The machine file is the single source of the numbers: plancoll-predict reads the same file, so a simulation
and a prediction use the same latency, bandwidth and overheads. The mapping (what each key becomes) is below,
at platform_xml() and smpi_flags(); machines/README.md explains why it is what it is.

Standard library only (Debian's /usr/bin/python3).
"""

import argparse
import math
import re
import sys
from xml.sax.saxutils import quoteattr

# key -> (kind, default). Default None: required. A callable default is computed from the other values.
KEYS = {
    "name": ("word", None),
    "cores_per_node": ("int", "ppn"),
    "core_gflops": ("float", 10.0),
    "net_latency_us": ("float", None),
    "net_overhead_us": ("float", 0.5),
    "net_gap_us": ("float", "net_overhead_us"),
    "net_bandwidth_GBps": ("float", None),
    "net_topology": ("text", "flat"),
    "net_backbone_GBps": ("float", 0.0),
    "shm_latency_us": ("float", None),
    "shm_bandwidth_GBps": ("float", None),
    "node_memory_bandwidth_GBps": ("float", "node_memory"),
    "sync_us": ("float", 0.2),
    "reduce_GBps": ("float", "reduce"),
    # added after the first format (docs/machines.md): MPI's own messages inside a node, and the network's
    # large-message start-up (a rendezvous), both optional
    "shm_msg_bandwidth_GBps": ("float", "shm_bandwidth_GBps"),
    "net_large_threshold_B": ("float", 0.0),
    "net_large_extra_us": ("float", 0.0),
    "turn_us": ("float", 0.0),
}

NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


class MachineError(Exception):
    pass


def parse_machine(text, path="<machine>"):
    """The key = value pairs of a machine file, checked: unknown keys, repeated keys, malformed numbers and
    missing required keys are errors naming the line."""
    values = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{lineno}"
        if "=" not in line:
            raise MachineError(f"{where}: expected 'key = value', got {line!r}")
        key, value = (s.strip() for s in line.split("=", 1))
        if key not in KEYS:
            raise MachineError(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")
        if key in values:
            raise MachineError(f"{where}: {key} given twice")
        kind = KEYS[key][0]
        if not value:
            raise MachineError(f"{where}: {key} has no value")
        if kind in ("int", "float"):
            if not NUMBER.match(value):
                raise MachineError(f"{where}: {key} = {value!r} is not a plain decimal number")
            number = float(value)
            if kind == "int":
                if number != int(number) or number < 1:
                    raise MachineError(f"{where}: {key} = {value!r} must be a positive integer")
                number = int(number)
            elif not math.isfinite(number) or number < 0:
                raise MachineError(f"{where}: {key} = {value!r} must be a finite number >= 0")
            values[key] = number
        elif kind == "word":
            if not re.match(r"^[A-Za-z0-9._+-]+$", value):
                raise MachineError(f"{where}: {key} = {value!r} must be one word (letters, digits, . _ + -)")
            values[key] = value
        else:
            values[key] = value
    for key, (kind, default) in KEYS.items():
        if default is None and key not in values:
            raise MachineError(f"{path}: required key {key} is missing")
    for key in ("net_latency_us", "net_bandwidth_GBps", "shm_bandwidth_GBps", "core_gflops", "shm_msg_bandwidth_GBps"):
        if key in values and values[key] <= 0:
            raise MachineError(f"{path}: {key} must be > 0")
    if ("net_large_threshold_B" in values) != ("net_large_extra_us" in values):
        raise MachineError(f"{path}: net_large_threshold_B and net_large_extra_us go together (give both, or neither)")
    threshold = values.get("net_large_threshold_B", 0)
    if "net_large_threshold_B" in values and (threshold < 1 or threshold != int(threshold)):
        raise MachineError(f"{path}: net_large_threshold_B = {threshold:g} is not a whole number of bytes of 1 or more")
    return values


def complete(values, ppn):
    """The machine with every default filled in (defaults as docs/machines.md gives them)."""
    m = dict(values)
    m.setdefault("cores_per_node", ppn)
    m.setdefault("core_gflops", 10.0)
    m.setdefault("net_overhead_us", 0.5)
    m.setdefault("net_gap_us", m["net_overhead_us"])
    m.setdefault("net_topology", "flat")
    m.setdefault("net_backbone_GBps", 0.0)
    m.setdefault("node_memory_bandwidth_GBps", m["shm_bandwidth_GBps"] * m["cores_per_node"] / 2)
    m.setdefault("sync_us", 0.2)
    m.setdefault("reduce_GBps", m["shm_bandwidth_GBps"] / 3)
    m.setdefault("shm_msg_bandwidth_GBps", m["shm_bandwidth_GBps"])
    m.setdefault("net_large_threshold_B", 0.0)
    m.setdefault("net_large_extra_us", 0.0)
    m.setdefault("turn_us", 0.0)
    m["ppn"] = ppn
    return m


def turn_overhead(m):
    """On a node with more ranks than cores, a message is taken only when its receiver gets a core again: the other
    ranks sharing that core have their turn first. SMPI's receive overhead (smpi/or) carries it:
    (ranks per core - 1) turn_us, ranks per core = ppn / cores_per_node; 0 on a node with a core per rank."""
    per_core = m["ppn"] / m["cores_per_node"]
    return max(0.0, per_core - 1) * m["turn_us"]


def parse_topology(text):
    """('flat', None) | ('fat-tree', (levels, downs, ups, counts)) | ('torus', dims)."""
    if text == "flat":
        return "flat", None
    if text.startswith("fat-tree:"):
        spec = text[len("fat-tree:"):]
        parts = spec.split(";")
        try:
            levels = int(parts[0])
            lists = [[int(x) for x in p.split(",")] for p in parts[1:]]
        except ValueError:
            raise MachineError(f"net_topology {text!r}: expected fat-tree:L;d1,..,dL;u1,..,uL;c1,..,cL")
        if len(lists) != 3 or levels < 1 or any(len(lst) != levels for lst in lists) \
                or any(x < 1 for lst in lists for x in lst):
            raise MachineError(f"net_topology {text!r}: expected fat-tree:L;d1,..,dL;u1,..,uL;c1,..,cL "
                               "(SimGrid's FAT_TREE parameters, L numbers in each list, all >= 1)")
        return "fat-tree", (levels, lists[0], lists[1], lists[2])
    if text.startswith("torus:"):
        try:
            dims = [int(x) for x in text[len("torus:"):].lower().split("x")]
        except ValueError:
            raise MachineError(f"net_topology {text!r}: expected torus:AxBxC")
        if not dims or any(d < 1 for d in dims):
            raise MachineError(f"net_topology {text!r}: expected torus:AxBxC with every size >= 1")
        return "torus", dims
    raise MachineError(f"net_topology {text!r}: use flat, fat-tree:<SimGrid FAT_TREE parameters> or torus:AxBxC")


def fat_tree_mean_links(downs):
    """Mean number of links on the route between two distinct hosts of a fat tree whose level i switches have
    downs[i] children: a pair whose lowest common switch is at level l crosses 2 l links (host up to it, down)."""
    hosts = math.prod(downs)
    below = 1  # hosts under one switch of the level being counted
    total_pairs = hosts * (hosts - 1)
    weighted = 0
    for level, d in enumerate(downs, 1):
        pairs_here = hosts * (below * d - below)  # ordered pairs meeting first at a level-`level` switch
        weighted += pairs_here * 2 * level
        below *= d
    return weighted / total_pairs


def torus_mean_links(dims):
    """Mean number of hops between two distinct hosts of a torus (shortest way round each ring)."""
    hosts = math.prod(dims)
    mean_all = sum(sum(min(k, a - k) for k in range(a)) / a for a in dims)  # over all pairs incl. self
    return mean_all * hosts / (hosts - 1)


def overheads(m):
    """(o_smpi_us, net_link_latency_total_us): the LogGP o goes to SMPI's send and receive overheads, but SMPI
    charges them on every message, also between ranks of one node, whose whole start-up is shm_latency_us. So
    SMPI gets o, capped at half the node's start-up, and the network route carries the rest of the end-to-end
    small-message time L + 2 o (the cost model's net_time at one byte)."""
    o = m["net_overhead_us"]
    o_smpi = min(o, m["shm_latency_us"] / 2)
    return o_smpi, m["net_latency_us"] + 2 * (o - o_smpi)


def us(x):
    return f"{x:.9g}us"


def gbps(x):
    return f"{x:.9g}GBps"


def platform_xml(m, nodes, memory=False):
    """The platform: one host per node (cores_per_node cores of core_gflops), a private full-duplex link per node
    into the network, a loopback link per node for messages between its ranks."""
    kind, topo = parse_topology(m["net_topology"])
    o_smpi, route_latency = overheads(m)
    if kind == "flat":
        hosts = nodes
        links_per_route = 2  # the source's private link up and the destination's down
        extra = ""
        if m["net_backbone_GBps"] > 0:
            extra = f' bb_bw="{gbps(m["net_backbone_GBps"])}" bb_lat="0us" bb_sharing_policy="SHARED"'
        topology = ""
    elif kind == "fat-tree":
        if m["net_backbone_GBps"] > 0:
            raise MachineError("net_backbone_GBps applies to the flat topology only")
        levels, downs, ups, counts = topo
        hosts = math.prod(downs)
        links_per_route = fat_tree_mean_links(downs)
        extra = ""
        params = f"{levels};{','.join(map(str, downs))};{','.join(map(str, ups))};{','.join(map(str, counts))}"
        topology = f' topology="FAT_TREE" topo_parameters="{params}"'
    else:
        if m["net_backbone_GBps"] > 0:
            raise MachineError("net_backbone_GBps applies to the flat topology only")
        hosts = math.prod(topo)
        links_per_route = torus_mean_links(topo) if hosts > 1 else 1
        extra = ""
        topology = f' topology="TORUS" topo_parameters="{",".join(map(str, topo))}"'
    if nodes > hosts:
        raise MachineError(f"--nodes {nodes}: the topology {m['net_topology']} has only {hosts} nodes")
    link_latency = route_latency / links_per_route
    loopback_latency = m["shm_latency_us"] - 2 * o_smpi
    cluster = (f'<cluster id={quoteattr(m["name"])} prefix="node-" radical="0-{hosts - 1}" suffix=""'
               f' speed="{m["core_gflops"]:.9g}Gf" core="{m["cores_per_node"]}"'
               f' bw="{gbps(m["net_bandwidth_GBps"])}" lat="{us(link_latency)}" sharing_policy="SPLITDUPLEX"'
               f' loopback_bw="{gbps(m["shm_msg_bandwidth_GBps"])}" loopback_lat="{us(loopback_latency)}"'
               f'{topology}{extra}/>')
    lines = [
        "<?xml version='1.0'?>",
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
        f"<!-- made by machines/make-platform.py from machine {m['name']} for {nodes} nodes: the numbers and",
        "     their sources are in the machine file; do not edit, regenerate -->",
        '<platform version="4.1">',
    ]
    if memory:
        # Each node's memory as a host of its own: speed = node_memory_bandwidth_GBps in bytes a second (one flop a
        # byte), on which plancoll's charged copies run (src/shm/sim_work.c), each bounded by one core's rate, so
        # that a node's concurrent copies share its bandwidth. No rank runs there and no message goes there.
        lines += ['  <zone id="platform" routing="Full">', "    " + cluster, '    <zone id="memory" routing="None">']
        lines += [f'      <host id="mem-node-{i}" speed="{m["node_memory_bandwidth_GBps"]:.9g}Gf"/>' for i in range(hosts)]
        lines += ["    </zone>", "  </zone>"]
    else:
        lines.append("  " + cluster)
    lines.append("</platform>")
    return "\n".join(lines) + "\n", hosts


def large_factor(m):
    """SMPI's latency factor for messages of at least net_large_threshold_B: SMPI multiplies the latency of a
    message's route by smpi/lat-factor (piecewise in the size), so a route of latency R pays R (X - 1) more when the
    factor is X = 1 + net_large_extra_us / R. None when the machine has no large-message term. The factor multiplies
    every route's latency, the loopback's too: a node's large messages then pay loopback_latency (X - 1) more
    (make-platform prints it; docs/machines.md)."""
    if m["net_large_extra_us"] <= 0 or m["net_large_threshold_B"] <= 0:
        return None
    _, route_latency = overheads(m)
    if route_latency <= 0:
        raise MachineError("net_large_extra_us needs a network route of some latency to scale "
                           "(net_latency_us + 2 net_overhead_us - 2 x SMPI's overhead is 0)")
    return 1 + m["net_large_extra_us"] / route_latency


def smpi_flags(m):
    """The smpirun --cfg flags the machine implies. SMPI's defaults would rescale the platform: its latency and
    bandwidth factors (fitted to a 2009 cluster) multiply every link's figures by size-dependent factors, while a
    machine file already gives end-to-end figures, so both factors are 1. The LogGP o becomes the send (os, ois)
    and receive (or) overhead of every message: 'threshold:seconds:seconds-per-byte'. smpi/host-speed makes the
    computation SMPI times on this host between MPI calls count 1:1 on a core of core_gflops.
    smpi/async-small-thresh: messages up to 64 KiB (SMPI's default smpi/send-is-detached-thresh) are eager, the
    sender never waits for the receiver, as MPI's eager protocol; with SMPI's default (0) a 1-byte message between
    nodes took 1.05 times the route's latency on this SimGrid (machines/tests/test-platform.py measures it)."""
    o_smpi, _ = overheads(m)
    o_s = f"{o_smpi * 1e-6:.9g}"
    o_r = f"{(o_smpi + turn_overhead(m)) * 1e-6:.9g}"
    factor = large_factor(m)
    lat = "--cfg=smpi/lat-factor:0:1"
    if factor is not None:
        # SMPI takes the factor of the last threshold at or below the size (3.32: smpi/lat-factor is
        # "size:factor;size:factor", sizes ascending); machines/tests/test-platform.py checks both sides of it
        lat += f";{int(m['net_large_threshold_B'])}:{factor:.9g}"
    return [
        lat,
        "--cfg=smpi/bw-factor:0:1",
        "--cfg=smpi/async-small-thresh:65536",
        f"--cfg=smpi/os:0:{o_s}:0",
        f"--cfg=smpi/ois:0:{o_s}:0",
        f"--cfg=smpi/or:0:{o_r}:0",
        f"--cfg=smpi/host-speed:{m['core_gflops']:.9g}Gf",
    ]


def hostfile_text(nodes, ppn):
    """K lines per host, hosts in order: SMPI places rank r on the r-th line, so node n holds ranks nK..nK+K-1
    (block placement, like MPIR_CVAR_CLIQUES_BY_BLOCK=1 on this machine)."""
    return "".join(f"node-{n}\n" * ppn for n in range(nodes))


def main(argv):
    ap = argparse.ArgumentParser(description="SimGrid platform from a plancoll machine file")
    ap.add_argument("machine")
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--ppn", type=int, help="ranks per node (default cores_per_node)")
    ap.add_argument("-o", "--output", required=True, help="platform XML to write")
    ap.add_argument("--hostfile", help="hostfile to write (default: the platform's name with .hosts)")
    ap.add_argument("--cfg-file", help="also write the --cfg flags there, one per line")
    ap.add_argument("--memory", action="store_true",
                    help="add a host per node for its memory (mem-node-I, node_memory_bandwidth_GBps), on which "
                         "plancoll charges its copies when PLANCOLL_SIM_COPY_GBPS is set (docs/smpi.md)")
    args = ap.parse_args(argv)
    try:
        with open(args.machine, encoding="utf-8") as f:
            values = parse_machine(f.read(), args.machine)
        if args.nodes < 1:
            raise MachineError(f"--nodes {args.nodes}: must be >= 1")
        ppn = args.ppn if args.ppn is not None else values.get("cores_per_node")
        if ppn is None:
            raise MachineError("--ppn is needed when the machine file gives no cores_per_node")
        if ppn < 1:
            raise MachineError(f"--ppn {ppn}: must be >= 1")
        m = complete(values, ppn)
        if m["shm_latency_us"] < 2 * m["net_overhead_us"]:
            print(f"make-platform: note: net_overhead_us {m['net_overhead_us']} is more than half of shm_latency_us "
                  f"{m['shm_latency_us']}: SMPI's per-message overhead is capped at {m['shm_latency_us'] / 2:.6g} us and "
                  "the rest of 2 o goes into the network route's latency", file=sys.stderr)
        xml, _ = platform_xml(m, args.nodes, args.memory)
        factor = large_factor(m)
        o_smpi, _ = overheads(m)
        loopback_extra = (m["shm_latency_us"] - 2 * o_smpi) * (factor - 1) if factor else 0
        if loopback_extra > 0:
            print(f"make-platform: note: SMPI's latency factor {factor:.6g} for messages of at least "
                  f"{int(m['net_large_threshold_B'])} B also scales the loopback: a large message inside a node pays "
                  f"{loopback_extra:.6g} us more too", file=sys.stderr)
    except (MachineError, OSError) as e:
        print(f"make-platform: {e}", file=sys.stderr)
        return 2
    hostfile = args.hostfile or re.sub(r"\.xml$", "", args.output) + ".hosts"
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(xml)
    with open(hostfile, "w", encoding="utf-8") as f:
        f.write(hostfile_text(args.nodes, ppn))
    flags = smpi_flags(m)
    if args.cfg_file:
        with open(args.cfg_file, "w", encoding="utf-8") as f:
            f.write("\n".join(flags) + "\n")
    print(" ".join(flags))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
