#!/usr/bin/python3
"""Independent ICRC oracle: scapy's RoCE layer recomputes the ICRC of every
IPv4 RoCEv2 frame (UDP dst 4791) in a pcap.

Prints one line per frame: "INDEX COMPUTED WIRE", ICRCs as 8 hex digits in
on-wire byte order, or "INDEX skip REASON" for frames it cannot judge (scapy
computes the ICRC for IPv4 only). Run with the system python3: Debian's
python3-scapy is not visible to a pyenv interpreter.
"""
import sys
import warnings

warnings.filterwarnings("ignore")
from scapy.all import Ether, IP, UDP, rdpcap, raw  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402


def main(path):
    for i, frame in enumerate(rdpcap(path)):
        data = raw(frame)
        pkt = Ether(data)
        if IP not in pkt or UDP not in pkt or pkt[UDP].dport != 4791 or BTH not in pkt:
            print(f"{i} skip not-ipv4-rocev2")
            continue
        wire = data[-4:].hex()
        pkt[BTH].icrc = None
        rebuilt = raw(pkt)
        print(f"{i} {rebuilt[-4:].hex()} {wire}")


if __name__ == "__main__":
    main(sys.argv[1])
