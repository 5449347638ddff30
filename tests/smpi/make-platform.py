#!/usr/bin/env python3
"""A small generic SimGrid platform for plancoll's SMPI tests: simulated nodes of given core counts on one switch.

make-platform.py CORES[,CORES...] PLATFORM.xml HOSTFILE

CORES lists the simulated nodes, one core count each ("6,6,4": three nodes, 16 cores). Every node is a host with
that many cores, joined to a crossbar switch by its own link (the node's network port); a message between two
nodes crosses the sender's link and the receiver's link, a message inside a node crosses the node's loopback
(SMPI's shared-memory path). HOSTFILE places one rank per core, node after node (blocks, as `host:N` lines), so
world ranks are numbered node by node.

The numbers are generic, not a calibration of any machine (correctness tests do not depend on them): a
25 Gbit/s, 1 us network port per node, memory copies at 10 GB/s with 0.1 us latency inside a node, 1 Gflop/s
per core. Each node also has a host mem-node-I for its memory, 10 GB/s shared by the node's ranks (1 flop a byte),
where plancoll charges its copies when PLANCOLL_SIM_COPY_GBPS is set (src/shm/sim_work.c; test_sim_work.c).
"""
import sys


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__.strip().splitlines()[2])
    try:
        cores = [int(c) for c in argv[1].split(',')]
    except ValueError:
        sys.exit(f'make-platform.py: {argv[1]!r}: expected core counts like 6,6,4')
    if not cores or min(cores) < 1:
        sys.exit(f'make-platform.py: {argv[1]!r}: every node needs at least one core')
    hosts = [f'node-{i}' for i in range(len(cores))]
    out = ["<?xml version='1.0'?>",
           '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
           '<platform version="4.1">',
           '  <zone id="nodes" routing="Full">']
    for h, c in zip(hosts, cores):
        out.append(f'    <host id="{h}" speed="1Gf" core="{c}"/>')
        out.append(f'    <host id="mem-{h}" speed="10Gf" core="1"/>')
    for h in hosts:
        out.append(f'    <link id="{h}-port" bandwidth="3.125GBps" latency="1us" sharing_policy="SPLITDUPLEX"/>')
        out.append(f'    <link id="{h}-loopback" bandwidth="10GBps" latency="0.1us" sharing_policy="FATPIPE"/>')
    for i, a in enumerate(hosts):
        out.append(f'    <route src="{a}" dst="{a}"><link_ctn id="{a}-loopback"/></route>')
        for b in hosts[i + 1:]:
            out.append(f'    <route src="{a}" dst="{b}" symmetrical="NO">'
                       f'<link_ctn id="{a}-port" direction="UP"/><link_ctn id="{b}-port" direction="DOWN"/></route>')
            out.append(f'    <route src="{b}" dst="{a}" symmetrical="NO">'
                       f'<link_ctn id="{b}-port" direction="UP"/><link_ctn id="{a}-port" direction="DOWN"/></route>')
    out += ['  </zone>', '</platform>', '']
    with open(argv[2], 'w') as f:
        f.write('\n'.join(out))
    with open(argv[3], 'w') as f:
        f.write(''.join(f'{h}:{c}\n' for h, c in zip(hosts, cores)))


if __name__ == '__main__':
    main(sys.argv)
