"""Secret redaction over 36 public token formats in five contexts, and its false positives."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from briefroom.errors import FatalBreaker
from briefroom.protocol.redaction import assert_no_secrets, redact, redact_text
from tests.secret_samples import benign, contexts, samples, secret_value

SAMPLES = samples()


def test_there_are_at_least_thirty_formats():
    assert len({name for name, _ in SAMPLES}) >= 30


@pytest.mark.parametrize("name,secret", SAMPLES, ids=[n for n, _ in SAMPLES])
def test_every_format_is_redacted_in_every_context(name, secret):
    value = secret_value(secret)
    for where, text in contexts(name, secret).items():
        out, findings = redact(text)
        assert findings, f"{name} not found in {where}"
        if where != "base64":
            assert value not in out, f"{name} survived in {where}: {out}"
            for i in range(0, max(len(value) - 8, 1)):  # no 8+ character fragment either
                assert value[i:i + 8] not in out or value[i:i + 8] in text.replace(value, ""), (name, where)
        else:
            assert "[REDACTED:BASE64_SECRET]" in out
        assert all(f.hash_prefix != value for f in findings)
        assert "[REDACTED:" in out


def test_findings_record_label_and_hash_not_value():
    secret = SAMPLES[0][1]
    _, findings = redact(f"token {secret}")
    assert findings[0].label == "GITHUB_TOKEN"
    assert findings[0].hash_prefix == hashlib.sha256(secret.encode()).hexdigest()[:12]


def test_benign_high_entropy_strings_are_left_alone():
    flagged = [s for s in benign() if redact(f"see {s} for details")[1]]
    assert len(flagged) <= 10, flagged[:5]


@given(st.text(max_size=300), st.sampled_from([s for _, s in SAMPLES]))
def test_redaction_is_idempotent(noise, secret):
    once = redact_text(noise + " " + secret + " " + noise)
    assert redact_text(once) == once


def test_assert_no_secrets_stops_the_call():
    with pytest.raises(FatalBreaker, match="GITHUB_TOKEN.*was about to enter the planner prompt"):
        assert_no_secrets(f"text {SAMPLES[0][1]}", "the planner prompt")
    assert_no_secrets("no secrets in here, only 723 billion USD", "a prompt")


def test_a_redacted_database_url_is_clean_and_the_run_can_go_on():
    env = "DATABASE_URL=postgres://app:s3cr3t-Pa55word@db.internal:5432/orders\nLOG_LEVEL=info"
    out = redact_text(env)
    assert "s3cr3t" not in out and "@db.internal" in out
    assert redact(out)[1] == []  # the marker is not a secret
    assert_no_secrets(out, "a prompt")


def test_an_empty_key_does_not_swallow_the_next_line():
    out = redact_text("GITHUB_API_KEY=\nREGION=eu-west-1-central")
    assert out.splitlines()[1] == "REGION=eu-west-1-central"
