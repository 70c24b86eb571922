"""Build bench/redaction.py's samples from local snapshots; nothing is fetched.

Secrets: the true positives of gitleaks' rule generators (cmd/generate/config/rules/*.go),
generated ones (`GenerateSampleSecrets(id, "ghp_" + secrets.NewSecret(utils.AlphaNumeric("36")))`,
the Go expression evaluated and the regex expanded with a seeded generator) and literal lines,
the secret cut from them with the rule's regex in config/gitleaks.toml. Benign lines: Python
(code), Markdown/rst/txt (doc) and Chinese Markdown (zh: 6+ CJK characters) lines of the given
repositories. Fixed seeds: the same snapshots give the same files. Snapshots, e.g. from mirrors:

    git --git-dir=<gitleaks/gitleaks mirror> archive HEAD | tar -x -C /tmp/src/gitleaks
    (benign: psf/requests, pallets/flask, jackfrued/Python-100-Days the same way; for the
    last, `archive HEAD -- '*.md' '*.py'` if the mirror lacks some large blobs)
    .venv/bin/python -m bench.redaction_samples --gitleaks /tmp/src/gitleaks \\
        --benign /tmp/src/requests /tmp/src/flask /tmp/src/100days --out /tmp/samples

Writes secrets.jsonl (rule_id, value, origin, prefix: the rule keyword the value starts with),
keynames.jsonl (style, text, value), benign.jsonl (kind, src, text), ordinary_50k.txt (code and
doc lines in file order) and dense_50k.json (records holding the secrets).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import tomllib
from collections import Counter
from pathlib import Path
from re import _parser as sre  # type: ignore[attr-defined]  # the stdlib regex parser
from typing import Any

ALNUM = string.ascii_letters + string.digits
CATEGORY = {"CATEGORY_DIGIT": string.digits, "CATEGORY_WORD": ALNUM + "_", "CATEGORY_SPACE": " ",
            "CATEGORY_NOT_DIGIT": string.ascii_letters, "CATEGORY_NOT_WORD": "-.:/", "CATEGORY_NOT_SPACE": ALNUM}
FAILED = (ValueError, TypeError, IndexError, StopIteration, re.error)


def go_regex(pattern: str) -> str:
    """Go (RE2) syntax to Python's: POSIX classes, \\z, a (?i) that is not at the start."""
    pattern = pattern.replace("[:alnum:]", "A-Za-z0-9").replace("[:alpha:]", "A-Za-z").replace("\\z", "\\Z")
    return "(?i)" + pattern.replace("(?i)", "") if "(?i)" in pattern else pattern


def xeger(pattern: str, rnd: random.Random) -> str:
    """A random string matching `pattern` (unbounded repeats stop 20 past their minimum)."""
    def charset(items: Any) -> list[str]:
        chars = [c for op, a in items for c in ([chr(a)] if str(op) == "LITERAL" else CATEGORY.get(str(a), "")
                 if str(op) == "CATEGORY" else map(chr, range(a[0], a[1] + 1)) if str(op) == "RANGE" else [])]
        negate = any(str(op) == "NEGATE" for op, _ in items)
        return [chr(c) for c in range(33, 127) if chr(c) not in chars] if negate else chars or list(ALNUM)

    def gen(items: Any) -> str:
        out = []
        for op, a in items:  # AT, ASSERT, ASSERT_NOT, GROUPREF: nothing written
            kind = str(op)
            out += ([chr(a)] if kind == "LITERAL" else [rnd.choice(charset(a))] if kind == "IN"
                    else [rnd.choice(ALNUM)] if kind in ("ANY", "NOT_LITERAL") else [rnd.choice(CATEGORY[str(a)])]
                    if kind == "CATEGORY" else [gen(rnd.choice(a[1]))] if kind == "BRANCH" else [gen(a[-1])]
                    if kind == "SUBPATTERN" else [gen(a[2]) for _ in range(rnd.randint(a[0], min(a[1], a[0] + 20)))]
                    if kind.endswith("_REPEAT") else [])
        return "".join(out)

    return gen(sre.parse(go_regex(pattern).replace("(?i)", "")))


TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|`[^`]*`|\.\.\.|:=|[A-Za-z_][\w.]*|\d+|.', re.S)
CLOSE = {"(": ")", "{": "}", "[": "]"}


class Go:
    """Evaluates the Go expressions rule generators build samples with: string literals, +,
    []string{...}, append, package and local variables, and the helpers below."""

    def __init__(self, rnd: random.Random) -> None:
        def cls(chars: str) -> Any:
            return lambda n: f"[{chars}]{{{n}}}"

        self.helpers: dict[str, Any] = {
            "utils.Numeric": cls("0-9"), "utils.Hex": cls("a-f0-9"), "utils.AlphaNumeric": cls("a-z0-9"),
            "utils.AlphaNumericExtendedShort": cls("a-z0-9_-"), "utils.AlphaNumericExtended": cls("a-z0-9=_\\-"),
            "utils.AlphaNumericExtendedLong": cls("a-z0-9\\/=_\\+\\-"),
            "utils.Hex8_4_4_4_12": lambda: "[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}",
            "secrets.NewSecret": lambda p: xeger(p, rnd), "append": lambda *a: list(a),
            "utils.GenerateSampleSecret": lambda i, s, *_: f'{i}_api_token = "{s}"',
            "utils.GenerateSampleSecrets": lambda i, s, *_: [("generated", s)],
            "fmt.Sprintf": lambda f, *a: re.sub(r"%[sdvq]", lambda _, it=iter(a): str(next(it)), f),
        }

    def eval(self, src: str, env: dict[str, Any]) -> Any:
        self.toks = [t for t in TOKEN.findall(src) if not (t.isspace() or t.startswith(("//", "/*")))]
        self.pos, self.env = 0, env
        return self.expr()

    def take(self, want: str | None = None) -> str:
        tok = self.toks[self.pos]
        if want is not None and tok != want:
            raise ValueError(f"{want} expected, {tok} found")
        self.pos += 1
        return tok

    def peek(self) -> str | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def expr(self) -> Any:
        value = self.term()
        while self.peek() == "+":
            self.take()
            value += self.term()
        return value

    def items(self, close: str) -> list[Any]:
        out: list[Any] = []
        while self.peek() != close:
            start = self.pos
            try:
                value = self.expr()
                out += value if isinstance(value, list) else [value]
            except FAILED:  # skip the element, up to the next comma at its level
                self.pos, depth = start, 0
                while depth or self.peek() not in (",", close):
                    tok = self.take()
                    depth += (tok in CLOSE) - (tok in CLOSE.values())
            while self.peek() in ("...", ","):
                self.take()
        self.take(close)
        return out

    def term(self) -> Any:
        tok = self.take()
        if tok[0] == "`":
            return tok[1:-1]
        if tok[0] == '"':
            return json.loads(tok)
        if tok.isdigit():
            return int(tok)
        if tok == "(":
            return (self.expr(), self.take(")"))[0]
        if tok == "[":  # []string{...}, []byte(...)
            self.take("]"), self.take()
            return self.items("}") if self.take() == "{" else (self.expr(), self.take(")"))[0]
        if self.peek() == "(" and tok in self.helpers:
            self.take()
            return self.helpers[tok](*self.items(")"))
        if tok in self.env:
            return self.env[tok]
        raise ValueError(tok)


def gitleaks_secrets(root: Path, seed: int = 1234) -> tuple[list[dict[str, Any]], Counter[str]]:
    rules = {r["id"]: r for r in tomllib.loads((root / "config/gitleaks.toml").read_text())["rules"]}
    go, stats, out = Go(random.Random(seed)), Counter[str](), []
    for path in sorted((root / "cmd/generate/config/rules").glob("*.go")):
        src, env = path.read_text(), {}
        for m in re.finditer(r"^(?:var|const) (\w+)\s*=\s*(.+)$", src, re.M):
            try:
                env[m[1]] = go.eval(m[2], env)
            except FAILED:
                pass
        for body in re.findall(r"^func \w+\(\) \*config\.Rule \{\n(.*?)^\}", src, re.S | re.M):
            rule_id = next(iter(re.findall(r'RuleID\s*[:=]\s*"([^"]+)"', body)), "")
            if rule_id not in rules:
                continue
            local, found = dict(env), []
            # statements of the body: "name := expr", "name = expr", "var name [type] = expr"
            for m in re.finditer(r"^\t(?:var )?(\w+)(?: [\w\[\]]+)? :?= ((?:.*\n)*?)(?=^\t[^\s)}\]]|\Z)", body, re.M):
                try:
                    local[m[1]] = go.eval(m[2], local)
                except FAILED:
                    stats["go_statements_skipped"] += 1
            for tp in local.get("tps") or []:
                value = cut(rules[rule_id], tp) if isinstance(tp, str) else tp[1]
                found += [("literal" if isinstance(tp, str) else "generated", value)] if value else []
            found.sort(key=lambda f: f[0] != "generated")  # generated first
            origin = {v: o for o, v in reversed(found)}
            values = [v for v in dict.fromkeys(v for _, v in found) if 8 <= len(v) <= 2000 and "\n" not in v][:4]
            stats["rules_with_samples" if values else "rules_without_samples"] += 1
            keywords = [k for k in rules[rule_id].get("keywords", []) if len(k) >= 3]
            out += [{"rule_id": rule_id, "value": v, "origin": origin[v],
                     "prefix": next((k for k in keywords if v.lower().startswith(k.lower())), None)} for v in values]
    return out, stats


def cut(rule: dict[str, Any], line: str) -> str | None:
    """The secret in a literal sample line, as the rule's regex delimits it."""
    try:
        m = re.search(go_regex(rule.get("regex", "(?!)")), line)
    except re.error:
        return None
    group = rule.get("secretGroup", 0)
    return None if not m else m[group] if group else next((g for g in m.groups() if g), m[0])


KEYNAMES = {  # style -> assignments of {v}
    "camel_eq": ("githubToken={v}", "dbPassword={v}", "stripeApiKey={v}", "clientSecret={v}", "authToken={v}"),
    "camel_colon": ("dbPassword: {v}", "githubToken: {v}", "apiKey: {v}", "clientSecret: {v}", "accessKey: {v}"),
    "snake": ("db_password = {v}", "github_token = {v}", "api_key = {v}", "client_secret = {v}", "private_key = {v}"),
    "screaming": ("DB_PASSWORD={v}", "GITHUB_TOKEN={v}", "SENTRY_AUTH_TOKEN={v}", "REDIS_PASS={v}",
                  "export DATABASE_PASSWORD={v}"),
    "kebab": ("--api-key {v}", "--auth-token={v}", "api-key: {v}", "client-secret = {v}", "x-api-key: {v}"),
    "go_walrus": ('apiToken := "{v}"', 'dbPassword := "{v}"', 'secretKey := "{v}"'),
    "make": ("API_TOKEN ?= {v}", "DB_PASSWORD ?= {v}", "API_TOKEN ::= {v}", "AUTH_SECRET ::= {v}"),
    "call": ('System.setProperty("X_TOKEN", "{v}");', 'props.setProperty("db.password", "{v}");',
             'config.set("api_key", "{v}")', 'os.environ["SERVICE_TOKEN"] = "{v}"'),
    "yaml": ("  password: {v}", "  api_token: '{v}'", '    secretKey: "{v}"', "auth:\n  token: {v}"),
    "json": ('{{"apiKey": "{v}"}}', '{{"password": "{v}"}}', '{{"client_secret": "{v}"}}', '{{"githubToken": "{v}"}}'),
    "toml": ('api_key = "{v}"', 'password = "{v}"', 'token = "{v}"', '[db]\npassword = "{v}"'),
}


def keynames(seed: int = 99) -> list[dict[str, str]]:
    rnd = random.Random(seed)
    values = ("".join(rnd.choice(ALNUM) for _ in range(30)) + "Q7" for _ in iter(int, 1))  # mixed case and digits
    return [{"style": style, "text": t.format(v=v), "value": v}
            for style, templates in KEYNAMES.items() for t in templates for v in (next(values) for _ in range(3))]


def benign(dirs: list[Path], per_kind: int, seed: int = 7) -> tuple[list[dict[str, str]], str]:
    """Up to per_kind distinct lines of each kind, and the code and doc lines in file order."""
    lines: dict[str, dict[str, dict[str, str]]] = {"code": {}, "doc": {}, "zh": {}}
    for root in dirs:
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".md", ".rst", ".txt") and p.is_file()):
            for line in path.read_text(errors="replace").splitlines():
                s, cjk = line.strip(), len(re.findall(r"[\u4e00-\u9fff]", line))
                kind = "code" if path.suffix == ".py" else "zh" if path.suffix == ".md" and cjk >= 6 else "doc"
                if len(s) >= 8 and not (kind == "zh" and s.startswith(("![", "<img", "```", "|"))) \
                        and not (kind == "doc" and cjk):
                    lines[kind].setdefault(line, {"kind": kind, "src": f"{root.name}/{path.relative_to(root)}",
                                                  "text": line})
    rnd, ordinary = random.Random(seed), "\n".join([*lines["code"], *lines["doc"]])
    return [o for kind in lines.values() for o in rnd.sample(list(kind.values()), min(per_kind, len(kind)))], ordinary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gitleaks", type=Path, required=True, help="a gitleaks checkout or `git archive` export")
    ap.add_argument("--benign", type=Path, nargs="+", required=True, help="repositories of ordinary code and docs")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-kind", type=int, default=10_000, help="benign lines kept per kind (code, doc, zh)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    secrets, stats = gitleaks_secrets(args.gitleaks)
    lines, ordinary = benign(args.benign, args.per_kind)
    for name, rows in (("secrets", secrets), ("keynames", keynames()), ("benign", lines)):
        (args.out / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    (args.out / "ordinary_50k.txt").write_text(ordinary.encode()[:50_000].decode(errors="ignore"))
    records: list[dict[str, Any]] = []
    while len(json.dumps(records, indent=1)) < 50_000:
        s = secrets[len(records) % len(secrets)]
        records.append({"id": len(records), "service": s["rule_id"], "note": "rotated last week", "token": s["value"]})
    (args.out / "dense_50k.json").write_text(json.dumps(records[:-1], indent=1))
    print(json.dumps({**stats, "secrets": len(secrets), "formats": len({s["rule_id"] for s in secrets}),
                      "prefixed": sum(1 for s in secrets if s["prefix"]), **Counter(s["origin"] for s in secrets),
                      **{f"benign_{k}": n for k, n in Counter(o["kind"] for o in lines).items()}}))


if __name__ == "__main__":
    main()
