"""Held-out benchmark of the prompt-injection detectors; prints JSON.

    python -m bench.injection [--mirror /work/.mirror] [--agentdojo PATH] [--dev-data DIR]
                              [--limit N] [--seed S]

Nothing is downloaded: every corpus is read from a local copy.

--mirror DIR     bare git snapshots named owner+name/repo (read with `git show HEAD:path`):
                 microsoft+BIPIA                 https://github.com/microsoft/BIPIA
                 meta-llama+PurpleLlama          https://github.com/meta-llama/PurpleLlama
                                                 (CyberSecEval prompt_injection*.json)
                 Giskard-AI+giskard              https://github.com/Giskard-AI/giskard
                 Giskard-AI+prompt-injections    https://github.com/Giskard-AI/prompt-injections
                 Clone them with `git clone --bare URL DIR/owner+name/repo` when missing.
--agentdojo P    the AgentDojo wheel or its unpacked directory
                 (`pip download agentdojo==0.1.35 --no-deps`); attack templates and the
                 v1 injection-task goals are read from its sources with `ast` (not executed).
--dev-data DIR   benign.jsonl of the development set (see bench/train_injection_head.py);
                 its split=eval passages are the benign false-positive pools.
--extra FILE     more held-out items as JSON lines: {"text", "corpus", "lang"} is an attack,
                 {"text", "pool"} a benign passage (its own false-positive pool).  Tensor
                 Trust and deepset/prompt-injections are read this way; build the file from
                 the snapshots HumanCompatibleAI/tensor-trust-data (benchmarks/*-robustness/v1,
                 the `attack` field) and sinanw/llm-security-prompt-injection (data/raw/*.parquet,
                 a copy of deepset/prompt-injections: label 1 = attack, label 0 = benign pool)
                 with `python -m bench.injection --make-extra FILE` (needs pyarrow for the
                 parquet files; without it only Tensor Trust is written).

Reported per detector ("injection" = briefroom.protocol.injection.judge, "regex" =
briefroom.protocol.untrusted.instruction_like): recall per corpus and language, the
share of held-out items whose normalised text also occurs in the head's training
attacks (`overlap_with_train`) and recall on the rest (`recall_novel`), false positives
per benign pool, and milliseconds per KB of benign text.
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import random
import re
import subprocess
import sys
import time
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Callable

import numpy as np

from briefroom.agents.registry import builtin_roles
from briefroom.protocol import injection as inj
from briefroom.protocol.untrusted import instruction_like

TARGET_POOLS = ("howto_", "readme_", "legal_", "recipes_", "prose_zh", "security_docs")


def git_show(mirror: Path, repo: str, path: str) -> str | None:
    gd = mirror / repo / "repo"
    if not gd.exists():
        return None
    r = subprocess.run(["git", f"--git-dir={gd}", "show", f"HEAD:{path}"], capture_output=True)
    return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None


def insert_middle(host: str, attack: str) -> str:
    """Put `attack` between two lines/sentences near the middle of `host`."""
    spans = inj.units(host)
    if len(spans) < 2:
        return host + "\n" + attack
    cut = spans[len(spans) // 2][0]
    return host[:cut] + attack + "\n" + host[cut:]


# ----------------------------------------------------------------------------- corpora
def bipia(mirror: Path, rng: random.Random) -> tuple[list[dict], list[dict]]:
    items, clean = [], []
    emails = git_show(mirror, "microsoft+BIPIA", "benchmark/email/test.jsonl")
    codes = git_show(mirror, "microsoft+BIPIA", "benchmark/code/test.jsonl")
    if emails is None or codes is None:
        return items, clean
    email_ctx = [json.loads(x)["context"] for x in emails.splitlines() if x.strip()]
    code_ctx = ["\n".join(json.loads(x)["context"]) for x in codes.splitlines() if x.strip()]
    clean += [dict(text=t, pool="bipia_email_clean") for t in email_ctx]
    clean += [dict(text=t, pool="bipia_code_clean") for t in code_ctx]
    for kind, hosts in (("text", email_ctx), ("code", code_ctx)):
        attacks = json.loads(git_show(mirror, "microsoft+BIPIA", f"benchmark/{kind}_attack_test.json") or "{}")
        for cat, lst in attacks.items():
            for a in lst:
                items.append(dict(text=a, corpus=f"bipia/{kind}-standalone", lang="en", group=cat))
                items.append(dict(text=insert_middle(rng.choice(hosts), a), corpus=f"bipia/{kind}-in-{'email' if kind == 'text' else 'code'}",
                                  lang="en", group=cat, inj=a))
    return items, clean


LANG = {"English": "en", "Chinese": "zh", "Spanish": "es", "French": "fr", "German": "de", "Italian": "it",
        "Portuguese": "pt", "Russian": "ru", "Japanese": "ja", "Korean": "ko", "Arabic": "ar", "Hindi": "hi",
        "Bengali": "bn", "Turkish": "tr", "Vietnamese": "vi", "Indonesian": "id", "Thai": "th", "Filipino/Tagalog": "tl"}


def cyberseceval(mirror: Path) -> list[dict]:
    items = []
    base = "CybersecurityBenchmarks/datasets/prompt_injection/"
    for fname, tag in (("prompt_injection.json", "cyberseceval"), ("prompt_injection_multilingual_machine_translated.json",
                                                                    "cyberseceval-mt")):
        raw = git_show(mirror, "meta-llama+PurpleLlama", base + fname)
        for r in json.loads(raw or "[]"):
            items.append(dict(text=r["user_input"], corpus=f"{tag}/{r['injection_type']}",
                              lang=LANG.get(r["speaking_language"], r["speaking_language"]), group=r["injection_variant"]))
    return items


def giskard(mirror: Path) -> list[dict]:
    items, seen = [], set()
    for repo, path in (("Giskard-AI+giskard", "giskard/llm/loaders/local/prompt_injections.csv"),
                       ("Giskard-AI+prompt-injections", "prompt_injections.csv")):
        raw = git_show(mirror, repo, path)
        for r in csv.DictReader(io.StringIO(raw or "")):
            if r["prompt"] in seen:
                continue
            seen.add(r["prompt"])
            items.append(dict(text=r["prompt"], corpus="giskard", lang=r.get("language") or "en", group=r.get("group", "")))
    return items


def _module_strings(src: str) -> dict[str, str]:
    """Module-level NAME = "literal" / f-string assignments, f-strings evaluated against earlier ones."""
    env: dict[str, str] = {}
    for node in ast.parse(src).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                env[node.targets[0].id] = eval(compile(ast.Expression(node.value), "<s>", "eval"), {"__builtins__": {}}, dict(env))
            except Exception:
                pass
    return {k: v for k, v in env.items() if isinstance(v, str)}


def agentdojo(path: Path | None, rng: random.Random) -> list[dict]:
    if path is None or not path.exists():
        return []
    if path.is_file():
        z = zipfile.ZipFile(path)
        files = {n: z.read(n).decode("utf-8", "replace") for n in z.namelist() if n.endswith((".py", ".yaml"))}
    else:
        files = {str(p.relative_to(path)): p.read_text("utf-8", "replace") for p in path.rglob("*") if p.suffix in (".py", ".yaml")}
    templates: dict[str, str] = {}
    for name, src in files.items():
        if not name.startswith("agentdojo/attacks/"):
            continue
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ClassDef):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_JB_STRING" for t in sub.targets):
                        templates[node.name] = ast.literal_eval(sub.value)
                    if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "__init__"
                            and sub.args and isinstance(sub.args[0], ast.Constant) and isinstance(sub.args[0].value, str)
                            and "{goal}" in sub.args[0].value):
                        templates[node.name] = sub.args[0].value
    goals: list[tuple[str, str]] = []
    for name, src in files.items():
        m = re.match(r"agentdojo/default_suites/v1/(\w+)/injection_tasks\.py$", name)
        if not m:
            continue
        env = _module_strings(src)
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ClassDef):
                local = dict(env)  # class-level constants (e.g. the attacker's IBAN) precede GOAL
                for sub in node.body:
                    if not (isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name)):
                        continue
                    try:
                        value = eval(compile(ast.Expression(sub.value), "<g>", "eval"), {"__builtins__": {}}, dict(local))
                    except Exception:
                        continue
                    local[sub.targets[0].id] = value
                    if sub.targets[0].id == "GOAL" and isinstance(value, str):
                        goals.append((m.group(1), value))
    # tool outputs to hide the attacks in: the suites' environment files around an injection slot
    hosts: dict[str, list[str]] = defaultdict(list)
    for name, src in files.items():
        m = re.match(r"agentdojo/data/suites/(\w+)/environment\.yaml$", name)
        if m:
            for slot in re.finditer(r"\{injection_\w+\}", src):
                chunk = src[max(0, slot.start() - 600): slot.end() + 600]
                hosts[m.group(1)].append(re.sub(r"\{injection_\w+\}", "{SLOT}", chunk, count=0))
    items = []
    for cls, tpl in sorted(templates.items()):
        for suite, goal in goals:
            text = tpl.replace("{goal}", goal).replace("{user}", "Emma Johnson").replace("{model}", "GPT-4").replace("{tools}", "")
            items.append(dict(text=text.strip(), corpus="agentdojo/standalone", lang="en", group=cls))
            if hosts.get(suite):
                host = rng.choice(hosts[suite])
                first = host.index("{SLOT}")
                placed = host[:first] + text + host[first + 6:]
                items.append(dict(text=placed.replace("{SLOT}", ""), corpus="agentdojo/in-tool-output", lang="en", group=cls,
                                  inj=text))
    return items


_DE = re.compile(r"\b(und|der|die|das|ist|nicht|ich|sie|du|mir|ein|eine|zu|mit|auf|für|wie|vergiss|ignoriere)\b", re.I)
_EN = re.compile(r"\b(the|and|is|not|you|your|to|of|a|with|for|how|what|ignore|forget)\b", re.I)


def make_extra(mirror: Path, dest: Path) -> None:
    """Write Tensor Trust attacks and deepset/prompt-injections (attacks and benign pool) to `dest`."""
    rows: list[dict] = []
    for name in ("hijacking", "extraction"):
        raw = git_show(mirror, "HumanCompatibleAI+tensor-trust-data",
                       f"benchmarks/{name}-robustness/v1/{name}_robustness_dataset.jsonl")
        for line in (raw or "").splitlines():
            if line.strip():
                rows.append(dict(text=json.loads(line)["attack"], corpus=f"tensor-trust/{name}", lang="en"))
    gd = mirror / "sinanw+llm-security-prompt-injection" / "repo"
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
        print("pyarrow missing: deepset not written", file=sys.stderr)
    if pq is not None and gd.exists():
        for part in ("train-00000-of-00001-9564e8b05b4757ab", "test-00000-of-00001-701d16158af87368"):
            blob = subprocess.run(["git", f"--git-dir={gd}", "show", f"HEAD:data/raw/{part}.parquet"],
                                  capture_output=True, check=True).stdout
            for r in pq.read_table(io.BytesIO(blob)).to_pylist():
                lang = "de" if len(_DE.findall(r["text"])) > len(_EN.findall(r["text"])) else "en"
                rows.append(dict(text=r["text"], corpus="deepset", lang=lang) if r["label"] == 1
                            else dict(text=r["text"], pool=f"deepset_benign_{lang}"))
    dest.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    print(f"wrote {len(rows)} rows to {dest}", file=sys.stderr)


# ----------------------------------------------------------------------------- evaluation
def train_hashes() -> set[int]:
    from importlib import resources
    with resources.files("briefroom.protocol").joinpath("injection_head.npz").open("rb") as fh, np.load(fh) as z:
        return set(int(h) for h in z["train_hashes"]) if "train_hashes" in z else set()


def text_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(inj.normalize(text).strip().lower().encode(), digest_size=8).digest(), "little")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--agentdojo", type=Path, default=None)
    ap.add_argument("--dev-data", type=Path, default=None)
    ap.add_argument("--extra", type=Path, action="append", default=[])
    ap.add_argument("--limit", type=int, default=60, help="max items per corpus/language (and per benign pool)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--make-extra", type=Path, default=None, help="write the Tensor Trust/deepset --extra file and exit")
    args = ap.parse_args(argv)
    if args.make_extra:
        make_extra(args.mirror, args.make_extra)
        return 0
    rng = random.Random(args.seed)

    items, clean = bipia(args.mirror, rng)
    items += cyberseceval(args.mirror) + giskard(args.mirror) + agentdojo(args.agentdojo, rng)
    for extra in args.extra:
        for x in extra.read_text("utf-8").splitlines():
            if x.strip():
                r = json.loads(x)
                (clean if "pool" in r else items).append(r)
    if args.dev_data:
        for line in (args.dev_data / "benign.jsonl").read_text("utf-8").splitlines():
            b = json.loads(line)
            if b["split"] == "eval" and b["pool"].startswith(TARGET_POOLS):
                clean.append(dict(text=b["text"], pool=b["pool"]))

    def cap(rows: list[dict], key: Callable[[dict], str]) -> list[dict]:
        g: dict[str, list[dict]] = defaultdict(list)
        for r in rows:
            g[key(r)].append(r)
        out = []
        for k in sorted(g):
            rng.shuffle(g[k])
            out += g[k][: args.limit]
        return out

    items = cap(items, lambda r: f"{r['corpus']}|{r['lang']}")
    clean = cap(clean, lambda r: r["pool"])
    seen = train_hashes()
    team = tuple(r.name for r in builtin_roles())  # the rules addressing a role use the built-in team's names
    detectors: dict[str, Callable[[str], bool]] = {
        "injection": lambda t: inj.judge(t).flagged,
        "regex": lambda t: instruction_like(t, team) is not None,
    }
    inj.judge("warm up the encoder.")
    corpora = {r["corpus"].split("/")[0] for r in items}
    out: dict = {"unavailable": [f"{c} (no local copy; see --extra)" for c in ("tensor-trust", "deepset") if c not in corpora],
                 "threshold": inj.threshold(), "n_items": len(items), "n_benign": len(clean)}
    if args.agentdojo is None:
        out["unavailable"].append("agentdojo (pass --agentdojo)")
    for name, fn in detectors.items():
        rec: dict[str, list[bool]] = defaultdict(list)
        novel: dict[str, list[bool]] = defaultdict(list)
        overlap: dict[str, list[bool]] = defaultdict(list)
        for r in items:
            hit = fn(r["text"])
            k = f"{r['corpus']}|{r['lang']}"
            rec[k].append(hit)
            dup = text_hash(r.get("inj", r["text"])) in seen
            overlap[k].append(dup)
            if not dup:
                novel[k].append(hit)
        fp: dict[str, list[bool]] = defaultdict(list)
        t0, nbytes = time.perf_counter(), 0
        for b in clean:
            fp[b["pool"]].append(fn(b["text"]))
            nbytes += len(b["text"].encode("utf-8"))
        ms_per_kb = (time.perf_counter() - t0) * 1000 / max(nbytes / 1024, 1e-9)
        out[name] = {
            "recall": {k: [round(float(np.mean(v)), 3), len(v)] for k, v in sorted(rec.items())},
            "recall_novel": {k: [round(float(np.mean(v)), 3), len(v)] for k, v in sorted(novel.items()) if len(v) < len(rec[k])},
            "overlap_with_train": {k: round(float(np.mean(v)), 3) for k, v in sorted(overlap.items()) if any(v)},
            "fp_per_pool": {k: [round(float(np.mean(v)), 3), len(v)] for k, v in sorted(fp.items())},
            "ms_per_kb": round(ms_per_kb, 2),
        }
        print(f"done {name}", file=sys.stderr)
    print(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
