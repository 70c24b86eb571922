"""One redactor for every boundary where text enters a prompt or leaves the process.

Rules are public token formats (prefixes and lengths published by each vendor) plus
context rules (a secret-looking key next to a value, credentials in URLs and headers,
PEM blocks) and base64: a long base64 run that decodes to text containing a secret
is replaced whole. A rule runs only when its literal anchor occurs in the text, so a
50 KB tool output costs a few substring tests and one or two regex passes. A hit
becomes a typed marker such as `[REDACTED:GITHUB_TOKEN]`; the
audit keeps label, position and a hash prefix, never the value. Markers match no
rule, so redaction is idempotent.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache

from pydantic import BaseModel

from briefroom.errors import FatalBreaker

_SECRET_KEY = r"(?:api[_-]?key|apikey|secret(?:[_-]?key)?|client[_-]?secret|access[_-]?token|auth[_-]?token|" \
              r"token|private[_-]?key|aws_secret_access_key|password|passwd|pwd|credentials?)"

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
    ("AZURE_STORAGE_KEY", ("==",), r"AccountKey=[A-Za-z0-9+/]{86}==|\b[A-Za-z0-9+/]{86}==(?=\s|;|\"|'|$)"),
    ("JWT", ("eyj",), r"eyJ(?<![A-Za-z0-9_]eyJ)[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("AUTH_HEADER", ("authorization",), r"(?i:(?<=authorization: )(?:bearer|basic|token) [A-Za-z0-9._~+/\-]+=*)"),
    ("AUTH_HEADER", ("bearer",), r"(?i:\bbearer [A-Za-z0-9._~+/\-]{16,}=*)"),
    # (?!\[REDACTED): the marker itself holds a colon and sits before the "@"; matching it
    # again made the redacted text look secret to assert_no_secrets and stopped the run
    ("URL_CREDENTIALS", ("@",), r"(?<=://)(?!\[REDACTED)[^\s:/@]+:(?!\[REDACTED)[^\s@/]+(?=@)"),
    ("SECRET_ASSIGNMENT", ("key", "secret", "token", "passw", "pwd", "credential"),
     r"(?<![A-Za-z0-9])(?i:" + _SECRET_KEY + r")[\"']?[ \t]*[:=][ \t]*[\"']?(?!\[REDACTED)(?!(?i:" + _SECRET_KEY +
     r")[\"']?\s*[:=])(?P<value>[^\s\"',;]{6,})"),
]
_COMPILED = [(label, anchors, re.compile(pattern)) for label, anchors, pattern in RULES]
# Every rule needs one of its literal anchors in the lower-cased text: one C-speed search
# for any anchor lets text without one (most log fields) skip the rules altogether.
_ANY_ANCHOR = re.compile("|".join(sorted({re.escape(a) for _, anchors, _ in RULES for a in anchors}, key=len,
                                         reverse=True)))
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


def _scan(text: str) -> tuple[str, list[Finding]]:
    lower = text.lower()
    spans: list[tuple[int, int, str]] = []
    for label, anchors, pattern in _COMPILED:
        if not any(a in lower for a in anchors):
            continue
        for m in pattern.finditer(text):
            start, end = m.span("value") if label == "SECRET_ASSIGNMENT" else m.span()  # keep the key
            spans.append((start, end, label))
    spans.sort(key=lambda s: (s[0], -s[1]))
    findings: list[Finding] = []
    out: list[str] = []
    last = 0
    for start, end, label in spans:
        if start < last:
            continue  # overlaps a match already replaced
        out.append(text[last:start])
        out.append(f"[REDACTED:{label}]")
        findings.append(Finding(label, start, hashlib.sha256(text[start:end].encode()).hexdigest()[:12]))
        last = end
    out.append(text[last:])
    return "".join(out), findings


def _contains_secret(text: str) -> bool:
    if "-----BEGIN" in text and _PEM.search(text):
        return True
    lower = text.lower()
    return any(any(a in lower for a in anchors) and pattern.search(text) for _, anchors, pattern in _COMPILED)


def _decoded_secret(blob: str) -> bool:
    try:
        raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return _contains_secret(decoded)


def redact(text: str) -> tuple[str, list[Finding]]:
    """`text` with every secret replaced by a typed marker, and what was found."""
    if "-----BEGIN" not in text and not _ANY_ANCHOR.search(text.lower()) and not _has_base64_run(text):
        return text, []
    findings: list[Finding] = []
    if "-----BEGIN" in text:
        def pem(m: re.Match[str]) -> str:
            findings.append(Finding("PRIVATE_KEY", m.start(), hashlib.sha256(m.group(0).encode()).hexdigest()[:12]))
            return "[REDACTED:PRIVATE_KEY]"

        text = _PEM.sub(pem, text)
    redacted, more = _scan(text)
    findings += more
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
