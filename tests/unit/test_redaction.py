"""Secret redaction over 36 public token formats in five contexts, and its false positives."""

from __future__ import annotations

import hashlib
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from briefroom.errors import FatalBreaker
from briefroom.protocol.redaction import assert_no_secrets, redact, redact_text
from tests.secret_samples import KEY_STYLES, PREFIXED, benign, contexts, fake, samples, secret_value

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
        else:  # the encoded blob goes whole, whichever layer decoded it
            blob = text.split("config blob: ", 1)[1]
            assert blob[:12] not in out and out.startswith("config blob: [REDACTED:")
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


@pytest.mark.parametrize("name", sorted(PREFIXED))
def test_prefixed_formats_are_redacted_alone_and_in_prose(name):
    value = PREFIXED[name]
    for text in (value, f"The deploy used {value} yesterday.", f'{{"note": "{value}"}}'):
        out = redact_text(text)
        assert not any(value[i:i + 8] in out for i in range(len(value) - 8)), (name, out)


@pytest.mark.parametrize("style", KEY_STYLES)
def test_a_value_known_only_by_its_key_is_redacted_in_every_naming_style(style):
    value = fake(zlib.crc32(style.encode()), 32)
    out = redact_text(style.format(v=value))
    assert value[:8] not in out and "[REDACTED:" in out, out


def test_names_templates_and_placeholders_assigned_to_secret_keys_stay():
    for line in ["self.password = password", "password = request.form['password']", "token=${TOKEN}",
                 "proxies = {'http': 'http://user:pass@10.10.1.10:3128/'}", "Never pass :data: as sender",
                 'return {"whiskey": "Jameson"}', "api_key = get_api_key(config)"]:
        assert redact_text(line) == line, line


def test_a_secret_disguised_with_full_width_or_invisible_characters_is_still_found():
    value = "ghp_" + fake(20, 36)
    wide = "".join(chr(ord(c) + 0xFEE0) for c in value)  # full-width forms
    split = value[:10] + "\u200b" + value[10:]
    for text in (f"token {wide} end", f"token {split} end"):
        out = redact_text(text)
        assert out.startswith("token [REDACTED:") and out.endswith(" end"), out


def test_a_key_repeated_inside_its_own_value_does_not_leave_the_real_token():
    token = "3238" + fake(21, 6, "0123456789") + ":A" + fake(22, 34)
    out = redact_text(f'telegram_api_token = "telegram_api_token = "{token}"')
    assert token[:8] not in out and token[-12:] not in out, out
