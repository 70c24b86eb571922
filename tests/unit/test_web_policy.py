"""Where web research may connect: addresses after resolution, allow/deny domains.

No test here opens a socket: the conftest guard fails any that tries, and the client
must refuse before it would."""

from __future__ import annotations

import pytest

from briefroom.web.net import (
    AddressPolicy,
    BlockedAddress,
    DomainPolicy,
    HttpClient,
    address_problem,
    normalise_domain,
)


@pytest.mark.parametrize("address, problem", [
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("::1", "loopback"),
    ("10.0.0.1", "private"), ("172.16.5.4", "private"), ("192.168.1.1", "private"), ("fd00::1", "private"),
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
    ("224.0.0.1", "multicast"), ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"), ("240.0.0.1", "reserved"),
    ("::ffff:10.0.0.1", "private"), ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped IPv6 is the IPv4 address
    ("2002:a00:1::", "private"),  # 6to4 carrying 10.0.0.1
    ("100.64.0.1", "shared (carrier-grade NAT)"),  # RFC 6598
])
def test_non_public_addresses_are_named(address, problem):
    assert address_problem(address) == problem


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(address):
    assert address_problem(address) is None


def resolver(table):
    def resolve(host, port):
        return table[host]
    return resolve


def test_a_name_resolving_to_a_private_address_is_refused():
    policy = AddressPolicy(resolve=resolver({"metadata.example": ["169.254.169.254"]}))
    with pytest.raises(BlockedAddress, match="link-local address"):
        policy.vet("metadata.example", 80)


def test_one_private_answer_among_public_ones_is_enough_to_refuse():
    policy = AddressPolicy(resolve=resolver({"mixed.example": ["93.184.216.34", "10.1.2.3"]}))
    with pytest.raises(BlockedAddress, match="10.1.2.3"):
        policy.vet("mixed.example", 443)


def test_a_public_name_gives_the_address_to_connect_to():
    policy = AddressPolicy(resolve=resolver({"example.com": ["93.184.216.34"]}))
    assert policy.vet("example.com", 443) == "93.184.216.34"


def test_the_allow_list_names_an_address_and_its_port_only():
    policy = AddressPolicy(allow=frozenset({"127.0.0.1:8123"}), resolve=resolver({"fixture": ["127.0.0.1"]}))
    assert policy.vet("fixture", 8123) == "127.0.0.1"
    with pytest.raises(BlockedAddress):
        policy.vet("fixture", 8124)


@pytest.mark.parametrize("host", ["127.1", "0x7f000001", "2130706433", "0177.0.0.1", "[::ffff:7f00:1]"])
def test_odd_spellings_of_loopback_are_resolved_then_refused(host):
    client = HttpClient()
    with pytest.raises(BlockedAddress):
        client.get(f"http://{host}/", max_bytes=1000)
    assert client.connected == []


@pytest.mark.parametrize("url", ["http://10.0.0.1/admin", "http://169.254.169.254/latest/meta-data/",
                                 "http://localhost:8080/", "http://[::1]/", "http://224.0.0.251/"])
def test_the_client_refuses_before_opening_a_socket(url):
    # A connection would also trip the conftest guard (NetworkBlocked is not caught by the client).
    client = HttpClient()
    with pytest.raises(BlockedAddress):
        client.get(url, max_bytes=1000)
    assert client.connected == []


def test_a_name_is_checked_at_connect_time_by_the_clients_resolver():
    client = HttpClient(policy=AddressPolicy(resolve=resolver({"intranet.example": ["10.9.8.7"]})))
    with pytest.raises(BlockedAddress, match="10.9.8.7"):
        client.get("http://intranet.example/wiki", max_bytes=1000)
    assert client.connected == []


def test_non_http_urls_are_refused():
    from briefroom.web.net import WebError

    with pytest.raises(WebError, match="not an http"):
        HttpClient().get("file:///etc/passwd", max_bytes=1000)


def test_domains_cover_their_subdomains_and_deny_wins():
    policy = DomainPolicy.of(allow=["example.com", "*.gov.uk"], deny=["ads.example.com"])
    assert policy.problem("https://example.com/a") is None
    assert policy.problem("https://news.example.com/a") is None
    assert policy.problem("https://data.gov.uk/x") is None
    assert "deny list" in policy.problem("https://ads.example.com/x")
    assert "deny list" in policy.problem("https://x.ads.example.com/x")
    assert "allow list" in policy.problem("https://badexample.com/")  # not a subdomain: a different name
    assert "allow list" in policy.problem("https://example.org/")


def test_without_an_allow_list_everything_not_denied_passes():
    policy = DomainPolicy.of(deny=["tracker.example"])
    assert policy.problem("http://anything.example/") is None
    assert policy.problem("http://TRACKER.example./x") is not None  # case and a trailing dot do not escape it


@pytest.mark.parametrize("url, words", [("ftp://example.com/f", "only http"), ("javascript:alert(1)", "only http"),
                                        ("http://user:pw@example.com/", "user name or password"),
                                        ("http:///path", "no host")])
def test_urls_that_are_not_plain_web_addresses_are_refused(url, words):
    assert words in DomainPolicy().problem(url)


def test_domain_normalisation():
    assert normalise_domain(" *.Example.COM. ") == "example.com"
    assert normalise_domain("https://Docs.Example.com/path") == "docs.example.com"
    assert normalise_domain("bücher.example") == "xn--bcher-kva.example"


@pytest.mark.parametrize("url", ["http://[::ffff:10.0.0.1", "https://example.com:99999/", "http://[not-an-ip]/"])
def test_a_malformed_url_is_a_reason_not_an_exception(url):
    assert DomainPolicy().problem(url).startswith("not a valid URL")
