"""The IANA special-purpose address registries, as data: what `addresses` judges by.

Transcribed from iana-ipv4-special-registry and iana-ipv6-special-registry (RFC 6890's
registries, with the entries added since, up to RFC 9780's dummy IPv6 prefix). Each row
keeps the registry's "Globally Reachable" column: True, False, or None where the
registry says N/A (Teredo, 6to4, the deprecated 6to4 relay and ORCHID blocks). Only
True is reachable; a block inside another is judged by the most specific one
(192.0.0.9/32 is True inside 192.0.0.0/24, which is False).

`OUTSIDE_THE_REGISTRIES` adds what the special-purpose registries leave to others but
briefroom must not connect to: multicast (IANA's multicast registries), the deprecated
IPv6 site-local block (RFC 3879; Python 3.11's `is_global` says True for it) and the
deprecated IPv4-compatible IPv6 form (RFC 4291), which `addresses` reads as the IPv4
address it carries.

`kind` is briefroom's own short word for a row, the one an error message names
("a private address (10.0.0.1)"); everything else is the registry's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecialRange:
    block: str  # CIDR, as the registry writes it
    name: str  # the registry's name for it
    rfc: str
    globally_reachable: bool | None  # None: the registry says N/A
    kind: str


IPV4_SPECIAL: tuple[SpecialRange, ...] = (
    SpecialRange("0.0.0.0/8", '"This network"', "RFC 791", False, "this-network"),
    SpecialRange("0.0.0.0/32", '"This host on this network"', "RFC 1122", False, "unspecified"),
    SpecialRange("10.0.0.0/8", "Private-Use", "RFC 1918", False, "private"),
    SpecialRange("100.64.0.0/10", "Shared Address Space", "RFC 6598", False, "shared (carrier-grade NAT)"),
    SpecialRange("127.0.0.0/8", "Loopback", "RFC 1122", False, "loopback"),
    SpecialRange("169.254.0.0/16", "Link Local", "RFC 3927", False, "link-local"),
    SpecialRange("172.16.0.0/12", "Private-Use", "RFC 1918", False, "private"),
    SpecialRange("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890", False, "protocol-assignment"),
    SpecialRange("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", False, "protocol-assignment"),
    SpecialRange("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", False, "dummy"),
    SpecialRange("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", True, "anycast"),
    SpecialRange("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", True, "anycast"),
    SpecialRange("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880", False, "protocol-assignment"),
    SpecialRange("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880", False, "protocol-assignment"),
    SpecialRange("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", False, "documentation"),
    SpecialRange("192.31.196.0/24", "AS112-v4", "RFC 7535", True, "anycast"),
    SpecialRange("192.52.193.0/24", "AMT", "RFC 7450", True, "anycast"),
    SpecialRange("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", None, "deprecated"),
    SpecialRange("192.88.99.2/32", "6a44-relay anycast address", "RFC 6751", True, "anycast"),
    SpecialRange("192.168.0.0/16", "Private-Use", "RFC 1918", False, "private"),
    SpecialRange("192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", True, "anycast"),
    SpecialRange("198.18.0.0/15", "Benchmarking", "RFC 2544", False, "benchmarking"),
    SpecialRange("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", False, "documentation"),
    SpecialRange("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", False, "documentation"),
    SpecialRange("240.0.0.0/4", "Reserved", "RFC 1112", False, "reserved"),
    SpecialRange("255.255.255.255/32", "Limited Broadcast", "RFC 919", False, "broadcast"),
)

IPV6_SPECIAL: tuple[SpecialRange, ...] = (
    SpecialRange("::1/128", "Loopback Address", "RFC 4291", False, "loopback"),
    SpecialRange("::/128", "Unspecified Address", "RFC 4291", False, "unspecified"),
    SpecialRange("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", False, "IPv4-mapped"),
    SpecialRange("64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052", True, "NAT64"),
    SpecialRange("64:ff9b:1::/48", "IPv4-IPv6 Translat.", "RFC 8215", False, "local NAT64"),
    SpecialRange("100::/64", "Discard-Only Address Block", "RFC 6666", False, "discard-only"),
    SpecialRange("100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", False, "dummy"),
    SpecialRange("2001::/23", "IETF Protocol Assignments", "RFC 2928", False, "protocol-assignment"),
    SpecialRange("2001::/32", "TEREDO", "RFC 4380", None, "Teredo"),
    SpecialRange("2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", True, "anycast"),
    SpecialRange("2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155", True, "anycast"),
    SpecialRange("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", "RFC 9665", True, "anycast"),
    SpecialRange("2001:2::/48", "Benchmarking", "RFC 5180", False, "benchmarking"),
    SpecialRange("2001:3::/32", "AMT", "RFC 7450", True, "anycast"),
    SpecialRange("2001:4:112::/48", "AS112-v6", "RFC 7535", True, "anycast"),
    SpecialRange("2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843", None, "deprecated"),
    SpecialRange("2001:20::/28", "ORCHIDv2", "RFC 7343", True, "ORCHIDv2"),
    SpecialRange("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", True, "DET"),
    SpecialRange("2001:db8::/32", "Documentation", "RFC 3849", False, "documentation"),
    SpecialRange("2002::/16", "6to4", "RFC 3056", None, "6to4"),
    SpecialRange("2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", True, "anycast"),
    SpecialRange("3fff::/20", "Documentation", "RFC 9637", False, "documentation"),
    SpecialRange("5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", False, "SRv6 SID"),
    SpecialRange("fc00::/7", "Unique-Local", "RFC 4193", False, "private"),
    SpecialRange("fe80::/10", "Link-Local Unicast", "RFC 4291", False, "link-local"),
)

OUTSIDE_THE_REGISTRIES: tuple[SpecialRange, ...] = (
    SpecialRange("224.0.0.0/4", "Multicast", "RFC 5771", False, "multicast"),
    SpecialRange("ff00::/8", "Multicast", "RFC 4291", False, "multicast"),
    SpecialRange("fec0::/10", "Site-Local (deprecated)", "RFC 3879", False, "site-local"),
    SpecialRange("::/96", "IPv4-compatible (deprecated)", "RFC 4291", False, "IPv4-compatible"),
)

# IPv6 outside it is "Reserved by IETF" in IANA's IPv6 address space registry: no host
# on the internet has such an address, whatever `is_global` says (4000::1 is "global").
IPV6_GLOBAL_UNICAST = "2000::/3"
