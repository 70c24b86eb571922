"""Whether an address is one briefroom may connect to, judged by the IANA registries.

`ipaddress.is_global` is not used: its tables vary with the Python release (3.11.7
says True for 192.0.0.8, the IPv4 dummy address, and for fec0::1, site-local), and a
fetch policy must not change with the interpreter. The registries are shipped as data
(`special_ranges`); the most specific block containing an address decides, and only a
block the registry marks globally reachable (True) may be reached. An address in no
block is ordinary unicast, except IPv6 outside 2000::/3, which is unassigned.

An IPv6 address that carries an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, the
deprecated IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4 2002:aabb:ccdd::)
reaches that IPv4 address in the end, so it is judged as that address.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache

from briefroom.web.special_ranges import (
    IPV4_SPECIAL,
    IPV6_GLOBAL_UNICAST,
    IPV6_SPECIAL,
    OUTSIDE_THE_REGISTRIES,
    SpecialRange,
)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_GLOBAL_UNICAST = ipaddress.IPv6Network(IPV6_GLOBAL_UNICAST)
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")


@dataclass(frozen=True)
class _Block:
    network: IPNetwork
    range: SpecialRange


@lru_cache(maxsize=1)
def _blocks() -> tuple[_Block, ...]:
    """Every row as a network, most specific first (so the first match decides)."""
    rows = (*IPV4_SPECIAL, *IPV6_SPECIAL, *OUTSIDE_THE_REGISTRIES)
    blocks = [_Block(ipaddress.ip_network(r.block), r) for r in rows]
    return tuple(sorted(blocks, key=lambda b: -b.network.prefixlen))


def special_range(ip: IPAddress) -> SpecialRange | None:
    """The most specific registry (or extra) row holding `ip`; None for ordinary unicast."""
    for block in _blocks():
        if block.network.version == ip.version and ip in block.network:
            return block.range
    return None


def carried_ipv4(ip: IPAddress) -> tuple[str, ipaddress.IPv4Address] | None:
    """(form, IPv4 address) when `ip` is an IPv6 address that carries an IPv4 one."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _MAPPED:
        return "IPv4-mapped", low32
    if ip in _COMPATIBLE and int(ip) > 1:  # :: and ::1 are the unspecified and loopback addresses themselves
        return "IPv4-compatible", low32
    if ip in _NAT64:
        return "NAT64", low32
    if ip in _SIX_TO_FOUR:
        return "6to4", ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF)
    return None


@dataclass(frozen=True)
class Refusal:
    """Why an address is off limits: a short kind for "a … address", and the rule's source."""

    kind: str  # "private", "dummy", "multicast", ...
    source: str  # "IANA: Private-Use, RFC 1918"


def refusal(address: str) -> Refusal | None:
    """Why `address` may not be connected to; None when it is globally reachable."""
    ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])  # a zone (fe80::1%eth0) is not the address
    carried = carried_ipv4(ip)
    if carried is not None:
        form, ipv4 = carried
        inner = refusal(str(ipv4))
        return None if inner is None else Refusal(inner.kind, f"{form}, carrying {ipv4}: {inner.source}")
    row = special_range(ip)
    if row is None:
        if isinstance(ip, ipaddress.IPv6Address) and ip not in _GLOBAL_UNICAST:
            return Refusal("unassigned", f"IANA: outside IPv6 global unicast {IPV6_GLOBAL_UNICAST}")
        return None
    if row.globally_reachable is True:
        return None
    registry = "IANA" if row in _REGISTRY_ROWS else "not globally reachable"
    return Refusal(row.kind, f"{registry}: {row.name}, {row.rfc}")


def address_problem(address: str) -> str | None:
    """The kind of address `address` is when it may not be connected to ("private",
    "loopback", "dummy", ...); None when it is globally reachable."""
    found = refusal(address)
    return None if found is None else found.kind


_REGISTRY_ROWS = frozenset((*IPV4_SPECIAL, *IPV6_SPECIAL))
