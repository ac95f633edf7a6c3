"""Whether an address is on the public internet, judged by what a connection to it reaches.

An IPv6 address can carry an IPv4 one: a NAT64 gateway (64:ff9b::/96) or a 6to4 relay
(2002::/16) turns `64:ff9b::7f00:1` or `2002:7f00:1::` into a connection to 127.0.0.1, and the
IPv4-mapped and IPv4-compatible forms name the IPv4 address itself. Python's `is_global` looks
at the IPv6 prefix only (3.11 calls `64:ff9b::7f00:1` global), so each such address is judged by
the IPv4 address it carries, as well as by its own prefix. The local-use NAT64 prefix
(64:ff9b:1::/48) is a site's own translator, never the internet, whatever it carries; Teredo
(2001::/32) carries its server's address and its client's (inverted), and both must be public.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
TEREDO = ipaddress.IPv6Network("2001::/32")
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
IPV4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT (RFC 2765)


@dataclass(frozen=True)
class Carried:
    """An IPv4 address an IPv6 one carries, and how (`NAT64`, `6to4`, ...)."""

    address: ipaddress.IPv4Address
    how: str


def carried(ip: IPAddress) -> list[Carried]:
    """The IPv4 addresses a connection to `ip` may reach instead of `ip` itself."""
    if isinstance(ip, ipaddress.IPv4Address):
        return []
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in IPV4_MAPPED:
        return [Carried(low, "IPv4-mapped")]
    if ip in IPV4_TRANSLATED:
        return [Carried(low, "IPv4-translated")]
    if ip in IPV4_COMPATIBLE:
        return [Carried(low, "IPv4-compatible")]
    if ip in NAT64:
        return [Carried(low, "NAT64")]
    if ip in SIX_TO_FOUR:
        return [Carried(ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF), "6to4")]
    if ip in TEREDO:
        server = ipaddress.IPv4Address((int(ip) >> 64) & 0xFFFFFFFF)
        return [Carried(server, "Teredo server"), Carried(ipaddress.IPv4Address(~int(ip) & 0xFFFFFFFF), "Teredo")]
    return []


INSIDE = "a loopback, private, link-local or reserved address"


def not_public(ip: IPAddress) -> str | None:
    """Why a connection to `ip` would not go to the public internet, as what follows the address
    in a sentence (`is ...`, `reaches ...`); None: it would."""
    if ip in NAT64_LOCAL:
        return f"is a local-use NAT64 address (64:ff9b:1::/48, a site's own translator), {INSIDE}"
    if not ip.is_global or ip.is_multicast:
        return f"is {INSIDE}"
    for inner in carried(ip):
        if not inner.address.is_global or inner.address.is_multicast:
            return f"reaches {inner.address} ({inner.how}), {INSIDE}"
    return None
