"""The address policy against the IANA special-purpose registries, block by block.

Every row of both registries is probed at its first, middle and last address; the
expected verdict comes from the row itself (the most specific row holding the probe,
found here by a plain scan), never from `ipaddress.is_global`, which the policy must not
consult: it is made to fail for the whole module.
"""

from __future__ import annotations

import ipaddress

import pytest

from briefroom.web.addresses import address_problem, refusal
from briefroom.web.net import AddressPolicy, BlockedAddress
from briefroom.web.special_ranges import IPV4_SPECIAL, IPV6_SPECIAL, OUTSIDE_THE_REGISTRIES, SpecialRange

ALL_ROWS = (*IPV4_SPECIAL, *IPV6_SPECIAL, *OUTSIDE_THE_REGISTRIES)

# The registries' "Globally Reachable = True" rows, written out here so the data module
# cannot drift from them unnoticed.
REACHABLE_BLOCKS = {
    "192.0.0.9/32", "192.0.0.10/32", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.2/32", "192.175.48.0/24",
    "64:ff9b::/96", "2001:1::1/128", "2001:1::2/128", "2001:1::3/128", "2001:3::/32", "2001:4:112::/48",
    "2001:20::/28", "2001:30::/28", "2620:4f:8000::/48",
}


@pytest.fixture(autouse=True)
def is_global_is_not_consulted(monkeypatch):
    def refuse(self):
        raise AssertionError("the address policy asked ipaddress.is_global / is_private")

    for cls in (ipaddress.IPv4Address, ipaddress.IPv6Address):
        monkeypatch.setattr(cls, "is_global", property(refuse))
        monkeypatch.setattr(cls, "is_private", property(refuse))


def probes(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> list[str]:
    first, last = int(network.network_address), int(network.broadcast_address)
    cls = type(network.network_address)
    return [str(cls(n)) for n in dict.fromkeys((first, (first + last + 1) // 2, last))]


def holding(address: str) -> SpecialRange | None:
    ip = ipaddress.ip_address(address)
    rows = [r for r in ALL_ROWS if ip.version == ipaddress.ip_network(r.block).version
            and ip in ipaddress.ip_network(r.block)]
    return max(rows, key=lambda r: ipaddress.ip_network(r.block).prefixlen, default=None)


def carried(address: str) -> str | None:
    """The IPv4 address an IPv6 one stands for, computed the long way (from the hex)."""
    ip = ipaddress.ip_address(address)
    if ip.version == 4:
        return None
    groups = ip.exploded.split(":")
    low32 = str(ipaddress.IPv4Address(int(groups[6] + groups[7], 16)))
    if groups[:6] == ["0000"] * 5 + ["ffff"] or groups[:6] == ["0064", "ff9b", "0000", "0000", "0000", "0000"]:
        return low32
    if groups[:6] == ["0000"] * 6 and address not in ("::", "::1"):
        return low32
    if groups[0] == "2002":
        return str(ipaddress.IPv4Address(int(groups[1] + groups[2], 16)))
    return None


def expected_reachable(address: str) -> bool:
    inner = carried(address)
    if inner is not None:
        return expected_reachable(inner)
    row = holding(address)
    if row is None:
        return ipaddress.ip_address(address).version == 4 or ipaddress.ip_address(address) in \
            ipaddress.ip_network("2000::/3")
    return row.globally_reachable is True


CASES = [(row.block, address) for row in ALL_ROWS for address in probes(ipaddress.ip_network(row.block))]


@pytest.mark.parametrize("block, address", CASES, ids=[f"{b}@{a}" for b, a in CASES])
def test_every_registry_block_is_decided_by_its_globally_reachable_column(block, address):
    want = expected_reachable(address)
    assert (address_problem(address) is None) is want, (block, address, refusal(address))
    policy = AddressPolicy(resolve=lambda host, port: [address])
    if want:
        assert policy.vet("h.example", 443) == address
    else:
        with pytest.raises(BlockedAddress, match="refused"):
            policy.vet("h.example", 443)


def test_the_walk_covers_both_registries_and_decides_both_ways():
    assert len(IPV4_SPECIAL) >= 26 and len(IPV6_SPECIAL) >= 25
    verdicts = {expected_reachable(address) for _, address in CASES}
    assert verdicts == {True, False}


def test_the_shipped_rows_marked_reachable_are_exactly_the_registries():
    assert {r.block for r in (*IPV4_SPECIAL, *IPV6_SPECIAL) if r.globally_reachable is True} == REACHABLE_BLOCKS
    assert all(r.globally_reachable is False for r in OUTSIDE_THE_REGISTRIES)
    blocks = [r.block for r in ALL_ROWS]
    assert len(blocks) == len(set(blocks))
    for block in blocks:  # each is a network written at its start (no host bits)
        assert str(ipaddress.ip_network(block)) == block


@pytest.mark.parametrize("address, kind", [
    ("192.0.0.8", "dummy"),  # Python 3.11.7's is_global: True
    ("fec0::1", "site-local"), ("feff:ffff::1", "site-local"),  # is_global: True
    ("192.0.0.170", "protocol-assignment"), ("192.88.99.1", "deprecated"), ("3fff::1", "documentation"),
    ("5f00::1", "SRv6 SID"), ("2001::1", "Teredo"), ("2001:10::1", "deprecated"), ("4000::1", "unassigned"),
    ("255.255.255.255", "broadcast"), ("239.255.255.250", "multicast"), ("ff05::2", "multicast"),
    ("64:ff9b:1::a00:1", "local NAT64"), ("::ffff:0:a00:1", "unassigned"),  # SIIT's ::ffff:0:a.b.c.d
])
def test_blocks_is_global_gets_wrong_are_refused(address, kind):
    assert address_problem(address) == kind


@pytest.mark.parametrize("address, kind", [
    ("::ffff:192.0.0.8", "dummy"), ("::10.0.0.1", "private"), ("64:ff9b::a9fe:a9fe", "link-local"),
    ("2002:c000:8::1", "dummy"), ("::ffff:224.0.0.1", "multicast"),
])
def test_an_ipv6_address_carrying_an_ipv4_one_is_judged_as_that_address(address, kind):
    assert address_problem(address) == kind
    assert "carrying" in refusal(address).source


@pytest.mark.parametrize("address", ["192.0.0.9", "192.175.48.1", "2001:1::3", "64:ff9b::808:808",
                                     "::ffff:8.8.8.8", "2002:808:808::1", "93.184.216.34", "2606:4700::1111"])
def test_globally_reachable_addresses_pass(address):
    assert address_problem(address) is None


def test_the_refusal_names_the_registry_row():
    policy = AddressPolicy(resolve=lambda host, port: ["192.0.0.8"])
    with pytest.raises(BlockedAddress, match=r"a dummy address \(192\.0\.0\.8\), IANA: IPv4 dummy address, RFC 7600"):
        policy.vet("dummy.example", 80)


def test_the_allow_list_still_opens_a_listed_address_and_port():
    policy = AddressPolicy(allow=frozenset({"[fec0::1]:8080"}), resolve=lambda host, port: ["fec0::1"])
    assert policy.vet("fixture", 8080) == "fec0::1"
    with pytest.raises(BlockedAddress, match="site-local"):
        policy.vet("fixture", 8081)
