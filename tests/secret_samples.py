"""Fake secrets in the public formats of each vendor, generated at test time.

Nothing here is a real credential: values are random characters in the documented
shape (prefix, alphabet, length), so a detector that works on these works on the
format. Each sample is planted in prose, JSON, an env file, HTTP headers and base64.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def samples(seed: int = 7) -> list[tuple[str, str]]:
    """(format name, fake secret) pairs: 36 formats."""
    r = random.Random(seed)
    pem_body = "\n".join(_r(r, B64, 64) for _ in range(4))
    return [
        ("github ghp_", "ghp_" + _r(r, ALNUM, 36)),
        ("github gho_", "gho_" + _r(r, ALNUM, 36)),
        ("github ghu_", "ghu_" + _r(r, ALNUM, 36)),
        ("github ghs_", "ghs_" + _r(r, ALNUM, 36)),
        ("github ghr_", "ghr_" + _r(r, ALNUM, 36)),
        ("github fine-grained", "github_pat_" + _r(r, ALNUM, 22) + "_" + _r(r, ALNUM, 59)),
        ("gitlab", "glpat-" + _r(r, URLSAFE, 20)),
        ("openai legacy", "sk-" + _r(r, ALNUM, 20) + "T3BlbkFJ" + _r(r, ALNUM, 20)),
        ("openai project", "sk-proj-" + _r(r, URLSAFE, 120)),
        ("openai service account", "sk-svcacct-" + _r(r, URLSAFE, 100)),
        ("openai admin", "sk-admin-" + _r(r, URLSAFE, 100)),
        ("anthropic", "sk-ant-api03-" + _r(r, URLSAFE, 93) + "AA"),
        ("aws access key id", "AKIA" + _r(r, UPPER_DIGITS, 16)),
        ("aws session key id", "ASIA" + _r(r, UPPER_DIGITS, 16)),
        ("google api key", "AIza" + _r(r, URLSAFE, 35)),
        ("slack bot", "xoxb-" + "-".join(_r(r, string.digits, 12) for _ in range(2)) + "-" + _r(r, ALNUM, 24)),
        ("slack app", "xoxa-2-" + _r(r, ALNUM, 40)),
        ("slack user", "xoxp-" + "-".join(_r(r, string.digits, 12) for _ in range(3)) + "-" + _r(r, HEX, 32)),
        ("slack refresh", "xoxr-" + _r(r, ALNUM, 40)),
        ("slack webhook", "https://hooks.slack.com/services/T" + _r(r, UPPER_DIGITS, 8) + "/B" + _r(r, UPPER_DIGITS, 10)
         + "/" + _r(r, ALNUM, 24)),
        ("stripe live", "sk_live_" + _r(r, ALNUM, 24)),
        ("stripe restricted", "rk_live_" + _r(r, ALNUM, 24)),
        ("stripe test", "sk_test_" + _r(r, ALNUM, 24)),
        ("npm", "npm_" + _r(r, ALNUM, 36)),
        ("pypi", "pypi-AgEIcHlwaS5vcmc" + _r(r, URLSAFE, 60)),
        ("twilio api key", "SK" + _r(r, HEX, 32)),
        ("sendgrid", "SG." + _r(r, URLSAFE, 22) + "." + _r(r, URLSAFE, 43)),
        ("azure storage", "AccountKey=" + _r(r, B64, 86) + "=="),
        ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx" + _r(r, URLSAFE, 20) + "." + _r(r, URLSAFE, 43)),
        ("pem private key", f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----"),
        ("bearer header", "Authorization: Bearer " + _r(r, URLSAFE, 40)),
        ("basic header", "Authorization: Basic " + base64.b64encode(b"admin:" + _r(r, ALNUM, 16).encode()).decode()),
        ("password assignment", "password=" + _r(r, ALNUM, 14)),
        ("url credentials", "postgres://admin:" + _r(r, ALNUM, 16) + "@db.internal:5432/app"),
        ("aws secret key", "aws_secret_access_key = " + _r(r, B64, 40)),
        ("api key assignment", 'api_key: "' + _r(r, ALNUM, 32) + '"'),
    ]


def secret_value(sample: str) -> str:
    """The part that must not survive (for key=value and header samples, the value)."""
    for sep in ("Bearer ", "Basic ", "password=", "= ", ': "'):
        if sep in sample:
            return sample.split(sep, 1)[1].strip('"')
    if sample.startswith("postgres://"):
        return sample.split(":")[2].split("@")[0]
    if sample.startswith("AccountKey="):
        return sample.split("=", 1)[1]
    return sample


def contexts(name: str, secret: str) -> dict[str, str]:
    """The same secret in prose, JSON, an env file, HTTP headers and base64."""
    return {
        "prose": f"While debugging I pasted {secret} into the ticket, sorry.",
        "json": '{"service": "billing", "credential": "%s", "retries": 3}' % secret.replace("\n", "\\n"),
        "env": f"SERVICE_URL=https://example.internal\nSERVICE_CREDENTIAL={secret}\nDEBUG=false",
        "http": f"GET /v1/things HTTP/1.1\nHost: api.example.com\nX-Api-Key: {secret}\nAccept: */*",
        "base64": "config blob: " + base64.b64encode(f"credential={secret}\n".encode()).decode(),
    }


def benign(n: int = 1000) -> list[str]:
    """High-entropy strings that are not secrets: UUIDs, git SHAs, sha256 digests, URLs, base64 images."""
    rng = random.Random(3)
    out = []
    for i in range(n):
        kind = i % 5
        if kind == 0:
            out.append(str(uuid.UUID(int=rng.getrandbits(128))))
        elif kind == 1:
            out.append("".join(rng.choice("0123456789abcdef") for _ in range(40)))  # git SHA
        elif kind == 2:
            out.append(hashlib.sha256(str(i).encode()).hexdigest())
        elif kind == 3:
            out.append(f"https://example.com/docs/{rng.getrandbits(64):x}?page={i}&ref=main#section-{i}")
        else:
            png = b"\x89PNG\r\n\x1a\n" + bytes(rng.getrandbits(8) for _ in range(60))
            out.append("data:image/png;base64," + base64.b64encode(png).decode())
    return out


def fake(seed: int, n: int, alphabet: str = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789") -> str:
    r = random.Random(seed)
    return "".join(r.choice(alphabet) for _ in range(n))


HEX = "0123456789abcdef"
# Formats with a distinctive prefix the first redactor missed without a key word nearby
# (fake values in each vendor's published shape).
PREFIXED = {
    "hugging face": "hf_" + fake(1, 34, "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"),
    "digitalocean": "dop_v1_" + fake(2, 64, HEX),
    "azure ad client secret": "dnX8Q~" + fake(3, 32),
    "gitlab runner": "glrt-" + fake(4, 20),
    "gitlab deploy": "gldt-" + fake(5, 20),
    "vault": "hvs." + fake(6, 90),
    "databricks": "dapi" + fake(7, 32, HEX),
    "shopify": "shpat_" + fake(8, 32, HEX),
    "slack app": "xapp-1-A0" + fake(9, 9, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789") + "-1234567890123-" + fake(10, 64, HEX),
    "perplexity": "pplx-" + fake(11, 48),
    "heroku": "HRKU-" + fake(12, 60),
    "google key ending in a dash": "AIza" + fake(13, 34) + "-",
    "new relic": "NRAK-" + fake(14, 27, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"),
    "planetscale": "pscale_tkn_" + fake(15, 43),
}


KEY_STYLES = ["githubToken={v}", "dbPassword: {v}", "stripeApiKey={v}", 'apiToken := "{v}"', "API_TOKEN ?= {v}",
              "API_TOKEN ::= {v}", 'System.setProperty("X_TOKEN", "{v}");', "--api-key {v}", "REDIS_PASS={v}",
              'os.environ["SERVICE_TOKEN"] = "{v}"', "  password: {v}", 'secret_key = "{v}"', "accessKey: {v}"]
