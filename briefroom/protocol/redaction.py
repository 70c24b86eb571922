"""One redactor for every boundary where text enters a prompt or leaves the process.

Two layers find secrets, and one replaces them:

- a maintained scanner, Kingfisher (`kingfisher-secret-scanner`: several hundred
  vendor formats, with the byte spans of each finding), built once per process;
- briefroom's own rules for what it does not cover: secrets known only by the key
  they are assigned to (in any naming style and assignment form: `dbPassword:`,
  `API_TOKEN ?=`, `apiToken :=`, `--api-key VALUE`, `setProperty("X_TOKEN", "…")`),
  bare AWS key ids, credentials in URLs and headers, PEM blocks, a few prefixed formats
  it misses, and base64: a long base64 run that decodes to text holding a secret is
  replaced whole.

Both read the text after Unicode NFKC with zero-width characters removed, so a token
written in full-width letters or split by invisible characters is still found; the
spans map back to the original text. A hit becomes a typed marker such as
`[REDACTED:GITHUB_TOKEN]`; the audit keeps label, position and a hash prefix, never the
value. Markers match no rule, so redaction is idempotent.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from briefroom.errors import FatalBreaker
from briefroom.protocol.chars import INVISIBLE, INVISIBLE_RE

# Words that make the value assigned to a key a secret: the key is an identifier that
# ends with one of them, in any style (api_key, API_TOKEN, githubToken, dbPassword,
# REDIS_PASS, os.environ["SERVICE_TOKEN"], x.auth.token), so only its end is matched;
# what is assigned must still look like a secret (plausible_secret). The lookahead on the
# first letter lets the regex engine skip to candidate positions at C speed (5-10x
# faster on 50 KB than starting with the case-insensitive alternation).
_SECRET_KEY = (r"(?=[kKsStTpPcCaA])(?:(?i:token|secret|passw(?:or)?d|pwd|credentials?|(?:api|access|private)[_-]?key)"
               # "key" and "pass" only as the last part of a name: db_pass, accessKey, X-API-KEY (not monkey, not "pass :")
               r"|(?<=[_\-.])(?i:key|pass)|(?<=[a-z])(?:Key|Pass))")
# "=", ":", ":=" (Go), "?=" and "::=" (make), "=>" (Ruby, PHP), with optional quotes around the key
_ASSIGN = r"[\"']?\]?[ \t]*(?:::=|:=|\?=|=>|[:=])[ \t]*[\"']?"
# a value: no spaces, quotes or separators, and no call ("password = get_password()")
_VALUE = r"(?!\[REDACTED)(?![^\s\"',;]*\()(?P<value>[^\s\"',;()\u0080-\U0010ffff]{6,})"

# PEM blocks span lines and may sit right after a "key=" that another rule would take
# first, so they get their own pass before the rest.
_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----")

# (label, anchors, pattern). A rule runs only if one of its anchors (lower-case
# literals) occurs in the text: one `in` test instead of a regex pass, which is what
# keeps a 50 KB tool output fast. Where two matches overlap, the earlier one wins.
# Patterns start with their literal prefix and check the word boundary before it with
# a lookbehind placed after it (`ghp_(?<![A-Za-z0-9_]ghp_)`, not `\bghp_`): a leading
# `\b` stops the regex engine from skipping ahead to the prefix, which made one rule
# cost ~30x more on a 50 KB text.
RULES: list[tuple[str, tuple[str, ...], str]] = [
    ("GITHUB_TOKEN", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_(?<![A-Za-z0-9_]gh[pousr]_)[A-Za-z0-9]{36,255}\b"),
    ("GITHUB_TOKEN", ("github_pat_",), r"github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b"),
    ("GITLAB_TOKEN", ("glpat-",), r"glpat-(?<![A-Za-z0-9_]glpat-)[A-Za-z0-9_\-]{20,}"),
    ("ANTHROPIC_KEY", ("sk-ant-",), r"sk-ant-(?<![A-Za-z0-9_]sk-ant-)(?:api|admin)\d{2}-[A-Za-z0-9_\-]{80,}"),
    ("OPENAI_KEY", ("sk-proj-", "sk-svcacct-", "sk-admin-"), r"sk-(?<![A-Za-z0-9_]sk-)(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}"),
    ("OPENAI_KEY", ("sk-",), r"sk-(?<![A-Za-z0-9_]sk-)(?:[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{48})\b"),
    ("AWS_ACCESS_KEY_ID", ("akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "anva", "aroa", "apka",
                           "asca"),
     r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)(?<![A-Za-z0-9_][A-Z]{4})[A-Z0-9]{16}\b"),
    ("GOOGLE_API_KEY", ("aiza",), r"AIza(?<![A-Za-z0-9_]AIza)[0-9A-Za-z_\-]{35}\b"),
    ("SLACK_WEBHOOK", ("hooks.slack.com",),
     r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"),
    ("SLACK_TOKEN", ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxe-"), r"xox[abpre]-(?<![A-Za-z0-9_]xox[abpre]-)[A-Za-z0-9\-]{10,}"),
    ("STRIPE_KEY", ("_live_", "_test_"), r"[sr]k_(?<![A-Za-z0-9_][sr]k_)(?:live|test)_[A-Za-z0-9]{16,}\b"),
    ("NPM_TOKEN", ("npm_",), r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}\b"),
    ("PYPI_TOKEN", ("pypi-",), r"pypi-(?<![A-Za-z0-9_]pypi-)AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
    ("SENDGRID_KEY", ("sg.",), r"SG\.(?<![A-Za-z0-9_]SG\.)[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b"),
    ("TWILIO_KEY", ("sk",), r"SK(?<![A-Za-z0-9_]SK)[0-9a-fA-F]{32}\b"),
    ("AZURE_STORAGE_KEY", ("accountkey=",), r"AccountKey=[A-Za-z0-9+/]{86}=="),
    # a bare one: no anchor word; runs only where a 40+ character base64 run exists (C-speed pre-check)
    ("AZURE_STORAGE_KEY", (), r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{86}==(?=\s|;|\"|'|$)"),
    ("JWT", ("eyj",), r"eyJ(?<![A-Za-z0-9_]eyJ)[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("AUTH_HEADER", ("authorization",), r"(?i:(?<=authorization: )(?:bearer|basic|token) [A-Za-z0-9._~+/\-]+=*)"),
    ("AUTH_HEADER", ("bearer",), r"(?i:\bbearer [A-Za-z0-9._~+/\-]{16,}=*)"),
    # Vendor formats with a distinctive prefix that Kingfisher's rules did not catch in
    # gitleaks' public samples (bench/redaction.py): Fly.io, PlanetScale, Grafana Cloud,
    # New Relic, Typeform, Harness, Artifactory, Defined Networking, ClickHouse Cloud,
    # Lob and GoCardless, written from the vendors' published token shapes.
    ("FLYIO_TOKEN", ("fo1_",), r"fo1_(?<![A-Za-z0-9_]fo1_)[A-Za-z0-9_\-]{39,}"),
    ("FLYIO_TOKEN", ("fm1", "fm2_"), r"fm[12][ar]?_(?<![A-Za-z0-9_]fm[12]_)[A-Za-z0-9+/=_\-]{60,}"),
    ("PLANETSCALE_TOKEN", ("pscale_",), r"pscale_(?<![A-Za-z0-9_]pscale_)(?:tkn|pw|oauth)_[A-Za-z0-9=_\-.]{32,}"),
    ("GRAFANA_TOKEN", ("glc_", "glsa_"), r"gl(?:c|sa)_(?<![A-Za-z0-9_]glc_)[A-Za-z0-9+/=_\-]{32,}"),
    ("NEW_RELIC_KEY", ("nrak-", "nrii-", "nrjs-", "nraa-", "nrra-"), r"NR(?:AK|II|JS|AA|RA)-[A-Za-z0-9]{19,}"),
    ("TYPEFORM_TOKEN", ("tfp_",), r"tfp_(?<![A-Za-z0-9_]tfp_)[A-Za-z0-9=_\-.]{40,}"),
    ("HARNESS_TOKEN", ("pat.",), r"pat\.(?<![A-Za-z0-9_]pat\.)[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    ("HARNESS_TOKEN", ("sat.",), r"sat\.(?<![A-Za-z0-9_]sat\.)[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    ("ARTIFACTORY_TOKEN", ("akcp",), r"AKCp(?<![A-Za-z0-9]AKCp)[A-Za-z0-9]{69}(?![A-Za-z0-9])"),
    ("ARTIFACTORY_TOKEN", ("cmvmd",), r"cmVmd(?<![A-Za-z0-9]cmVmd)[A-Za-z0-9]{59}(?![A-Za-z0-9])"),
    ("DEFINED_NETWORKING_KEY", ("dnkey-",), r"dnkey-(?<![A-Za-z0-9_]dnkey-)[A-Za-z0-9=_\-]{40,}"),
    ("CLICKHOUSE_KEY", ("4b1d",), r"4b1d(?<![A-Za-z0-9]4b1d)(?=[A-Za-z0-9]*[A-Z])[A-Za-z0-9]{38}(?![A-Za-z0-9])"),
    ("LOB_KEY", ("live_",), r"live_(?<![A-Za-z0-9_]live_)(?:pub_)?[a-f0-9]{31,35}(?![A-Za-z0-9])"),
    ("LOB_KEY", ("test_",), r"test_(?<![A-Za-z0-9_]test_)(?:pub_)?[a-f0-9]{31,35}(?![A-Za-z0-9])"),
    # Azure AD (Entra) client secrets: three characters, a digit, "Q~", then 31-34 more
    ("AZURE_AD_CLIENT_SECRET", ("q~",),
     # matched from its "Q~" (a literal the engine finds fast); the span is widened to its 4 leading characters
     r"Q~(?<=(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~)[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"),
    ("GOCARDLESS_TOKEN", ("live_",), r"live_(?<![A-Za-z0-9_]live_)[A-Za-z0-9_\-=]{40}(?![A-Za-z0-9_\-=])"),
    # (?!\[REDACTED): the marker itself holds a colon and sits before the "@"; matching it
    # again made the redacted text look secret to assert_no_secrets and stopped the run
    ("URL_CREDENTIALS", ("@",), r"(?<=://)(?!\[REDACTED)[^\s:/@]+:(?!\[REDACTED)[^\s@/]+(?=@)"),
    # key = value in any assignment form, or setProperty("X_TOKEN", "…") / headers.put('apiKey', '…'):
    # one regex, so the scan for key words happens once
    ("SECRET_ASSIGNMENT", ("key", "secret", "token", "pass", "pwd", "credential"),
     _SECRET_KEY + r"(?:" + _ASSIGN + r"(?!" + _SECRET_KEY + r"[\"']?\s*[:=])|[\"'][ \t]*,[ \t]*[\"'])" + _VALUE),
    # a command-line flag: --api-key VALUE
    ("SECRET_ASSIGNMENT", ("key", "secret", "token", "pass", "pwd", "credential"),
     r"--[A-Za-z0-9-]{0,40}?" + _SECRET_KEY + r"[ \t]+(?!-)" + _VALUE),
]
_COMPILED = [(label, anchors, re.compile(pattern)) for label, anchors, pattern in RULES]
# Most strings redacted are short run-log fields with none of the rules' anchors: one
# C-speed search for any anchor lets them skip the per-rule loop.
_ANY_ANCHOR = re.compile("|".join(sorted({re.escape(a) for _, anchors, _ in RULES for a in anchors}, key=len,
                                         reverse=True)))
_MARKER = re.compile(r"\[REDACTED:[A-Z0-9_]+\]")
# No format briefroom or Kingfisher knows is shorter than this (with its key, if it needs one).
_SHORTEST = 8
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")
# Byte table: base64 alphabet -> "a", anything else -> " ". Finding 40 "a"s in a row in the
# translated bytes is a C-speed pre-check for the (slow to scan) base64 regex above.
_B64_TABLE = bytes(97 if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/") else 32 for i in range(256))


def _has_base64_run(text: str) -> bool:
    return b"a" * 40 in text.encode("utf-8", errors="replace").translate(_B64_TABLE)


@dataclass(frozen=True)
class Finding:
    label: str
    start: int
    hash_prefix: str  # sha256 of the value, first 12 hex digits: enough to correlate, not to recover


# Characters a secret can be disguised with: invisible ones (removed) and look-alikes
# that NFKC maps to ASCII (full-width forms, mathematical letters and digits).
_DISGUISE = re.compile(f"[{INVISIBLE}]|" r"[\uff01-\uff5e\U0001d400-\U0001d7ff]")


def normalize(text: str) -> tuple[str, list[tuple[int, int]] | None]:
    """The text scanners read: look-alikes NFKC-mapped, invisible characters removed; with
    breakpoints (normalized index, original index) to map spans back, or None if unchanged."""
    if text.isascii() or not _DISGUISE.search(text):
        return text, None
    out: list[str] = []
    points = [(0, 0)]
    n = last = 0
    for m in _DISGUISE.finditer(text):
        out.append(text[last:m.start()])
        n += m.start() - last
        points.append((n, m.start()))
        replacement = "" if INVISIBLE_RE.fullmatch(m.group()) else unicodedata.normalize("NFKC", m.group())
        out.append(replacement)
        n += len(replacement)
        points.append((n, m.end()))
        last = m.end()
    out.append(text[last:])
    return "".join(out), points


def _original(points: list[tuple[int, int]], keys: list[int], at: int) -> int:
    i = bisect.bisect_right(keys, at) - 1
    normalized, original = points[i]
    return original + (at - normalized)


class _Kingfisher:
    """The maintained scanner, built once per process (its rules compile in seconds; it
    caches them on disk, in KF_RULE_CACHE_DIR or the user's cache directory)."""

    _lock = threading.Lock()
    _scanner: Any = None

    @classmethod
    def spans(cls, text: str) -> list[tuple[int, int, str]]:
        if cls._scanner is None:
            with cls._lock:
                if cls._scanner is None:
                    import kingfisher_sdk  # scanning never uses the network; its Validator would, and is not used

                    cls._scanner = kingfisher_sdk.Scanner(kingfisher_sdk.Rules(confidence="medium"))
        raw = text.encode("utf-8")
        out = []
        for finding in cls._scanner.scan(raw):
            start, end = finding.location["start_offset"], finding.location["end_offset"]
            if not text.isascii():  # byte offsets to character offsets
                start, end = len(raw[:start].decode("utf-8", "ignore")), len(raw[:end].decode("utf-8", "ignore"))
            out.append((start, end, _label(finding.rule_id)))
        return out


def _label(rule_id: str) -> str:
    """"betterleaks.github-pat" -> "GITHUB_PAT": the marker names the format, not the rule set."""
    return re.sub(r"[^A-Z0-9]+", "_", rule_id.split(".", 1)[-1].upper()).strip("_") or "SECRET"


def _own_spans(text: str) -> list[tuple[int, int, str]]:
    lower = text.lower()
    spans: list[tuple[int, int, str]] = []
    base64_run = _has_base64_run(text)
    if not base64_run and "-----begin" not in lower and not _ANY_ANCHOR.search(lower):
        return spans
    if "-----begin" in lower:
        spans += [(m.start(), m.end(), "PRIVATE_KEY") for m in _PEM.finditer(text)]
    for label, anchors, pattern in _COMPILED:
        if not (any(a in lower for a in anchors) if anchors else base64_run):
            continue
        for m in pattern.finditer(text):
            if label in _BY_KEY and not plausible_secret(m.group("value") if label == "SECRET_ASSIGNMENT"
                                                         else m.group().split(":", 1)[1]):
                continue
            start, end = m.span("value") if label == "SECRET_ASSIGNMENT" else m.span()  # keep the key
            spans.append((start - _LEADS.get(label, 0), end, label))
    return spans


# Rules matched from a literal inside the secret: how many characters before the match belong to it.
_LEADS = {"AZURE_AD_CLIENT_SECRET": 4}

# Rules that know a secret only by where it stands, not by its format: their value must
# look like one. Code and docs assign variables, templates and placeholders to such
# keys ("password = password", "token=${TOKEN}", "https://user:pass@proxy").
_BY_KEY = {"SECRET_ASSIGNMENT", "URL_CREDENTIALS"}
_NAME_PATH = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)*")
_PLACEHOLDER = re.compile(r"(?i)^(?:pass(?:word|wd)?|pwd|secret|changeme|example|x+|\*+|\.+|-+|test|dummy|redacted|"
                          r"none|null|true|false|undefined|your[_-]?\w*|my[_-]?\w*)$")


def plausible_secret(value: str) -> bool:
    """Not a name, a reference, a template or a placeholder."""
    value = value.strip("\"'`")
    if len(value) < 3 or _PLACEHOLDER.match(value) or any(c in value for c in "{}$<>[]%"):
        return False
    return not (_NAME_PATH.fullmatch(value) and (value.islower() or "." in value or "_" in value))


def _scan(text: str) -> tuple[str, list[Finding]]:
    flat, points = normalize(text)
    if "[REDACTED:" in flat:  # markers read as commas (no value, no URL part): "postgres://[REDACTED:…]@host" is no credential
        flat = _MARKER.sub(lambda m: "," * len(m.group()), flat)
    # a credential URL's password must look like one there too ("https://user:pass@proxy" is an example)
    spans = _own_spans(flat) + [(a, b, label) for a, b, label in _Kingfisher.spans(flat)
                                if "CREDENTIAL_URI" not in label or plausible_secret(flat[a:b])]
    if points is not None:
        keys = [p[0] for p in points]
        spans = [(_original(points, keys, a), _original(points, keys, b), label) for a, b, label in spans]
    # overlapping matches are one secret: merged, under the label of the one that starts first
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[list[Any]] = []
    for start, end, label in spans:
        if end <= start:
            continue
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end, label])
    findings: list[Finding] = []
    out: list[str] = []
    last = 0
    for start, end, label in merged:
        out.append(text[last:start])
        out.append(f"[REDACTED:{label}]")
        findings.append(Finding(label, start, hashlib.sha256(text[start:end].encode()).hexdigest()[:12]))
        last = end
    out.append(text[last:])
    return "".join(out), findings


def _contains_secret(text: str) -> bool:
    return bool(_own_spans(text) or _Kingfisher.spans(text))


def _decoded_secret(blob: str) -> bool:
    try:
        raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return _contains_secret(decoded)


def redact(text: str) -> tuple[str, list[Finding]]:
    """`text` with every secret replaced by a typed marker, and what was found."""
    if len(text) < _SHORTEST:
        return text, []
    redacted, findings = _scan(text)
    if _has_base64_run(redacted):
        def swap(m: re.Match[str]) -> str:
            if _decoded_secret(m.group(0)):
                findings.append(Finding("BASE64_SECRET", m.start(), hashlib.sha256(m.group(0).encode()).hexdigest()[:12]))
                return "[REDACTED:BASE64_SECRET]"
            return m.group(0)

        redacted = _BASE64_RUN.sub(swap, redacted)
    return redacted, findings


def redact_text(text: str) -> str:
    return redact(text)[0]


@lru_cache(maxsize=256)
def _labels(text: str) -> frozenset[str]:
    # A role's stable prefix and earlier turns are sent again on every call: scan each once.
    return frozenset(f.label for f in redact(text)[1])


def assert_no_secrets(text: str, where: str) -> None:
    """Stop the run if a secret is about to cross a boundary. Never 'log and continue'."""
    found = _labels(text)
    if found:
        labels = ", ".join(sorted(found))
        raise FatalBreaker(f"a secret ({labels}) was about to enter {where}; the call was not made")


def redact_data(value: object, found: dict[str, int] | None = None) -> object:
    """Redact every string inside nested dicts and lists (run log records, tool results);
    `found`, if given, counts what was redacted by label."""
    if isinstance(value, str):
        text, findings = redact(value)
        if found is not None:
            for f in findings:
                found[f.label] = found.get(f.label, 0) + 1
        return text
    if isinstance(value, dict):
        return {k: redact_data(v, found) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_data(v, found) for v in value]
    return value


def redact_deep(value: object) -> object:
    """Like `redact_data`, also through pydantic models, tuples and sets (checkpointed state).

    Values without a secret come back as the same objects, so callers can tell nothing changed.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, BaseModel):
        changed = {}
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = redact_deep(old)
            if new is not old and new != old:
                changed[name] = new
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, dict):
        out = {k: redact_deep(v) for k, v in value.items()}
        return value if all(out[k] is value[k] or out[k] == value[k] for k in value) else out
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [redact_deep(v) for v in value]
        if all(a is b or a == b for a, b in zip(items, value)):
            return value
        return type(value)(items)
    return value


def holds_secret(data: bytes) -> bool:
    """Whether serialized bytes (msgpack, JSON) contain a secret in any of their strings."""
    return bool(redact(data.decode("utf-8", errors="ignore"))[1])
