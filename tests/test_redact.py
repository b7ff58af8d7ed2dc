"""core.redact: every credential shape is scrubbed (keeping a kind hint), harmless text is left alone."""

from __future__ import annotations

import pytest

from core.redact import FORMAT_RULES, REDACTED, redact, shorten_request_ids, unfinished_secret_at

# (secret-bearing text, the secret itself, what must remain as the hint)
SECRETS = [
    ("key AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE", "AKIA[redacted]"),
    ("temporary ASIAY34FZKBOKMUTVV7A creds", "ASIAY34FZKBOKMUTVV7A", "ASIA[redacted]"),
    (
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key=[redacted]",
    ),
    (
        'AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS_SECRET_ACCESS_KEY",
    ),
    ("token ghp_16C7e42F292c6912E7710c838347Ae178B4a here", "16C7e42F292c6912E7710c838347Ae178B4a", "ghp_"),
    ("gho_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a", "gho_"),
    ("ghs_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a", "ghs_"),
    ("ghu_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a", "ghu_"),
    (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
        "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
        "github_pat_[redacted]",
    ),
    ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp", "AbCdEfGhIjKlMnOp", "xoxb-[redacted]"),
    ("xoxp-123456789012-1234567890123-AbCdEfGhIjKl", "AbCdEfGhIjKl", "xoxp-[redacted]"),
    ("xoxa-2-123456789012-AbCdEfGhIjKl", "AbCdEfGhIjKl", "xoxa-[redacted]"),
    ("xapp-1-A0123456789-1234567890123-abcdef0123456789", "abcdef0123456789", "xapp-[redacted]"),
    ("refresh xoxe-1-My0xLTEyMzQ1Njc4OTAxMi1BYkNk", "My0xLTEyMzQ1Njc4OTAxMi1BYkNk", "xoxe-[redacted]"),
    (
        "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0/getMe",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
        "123456789:[redacted]/getMe",
    ),
    ("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "eyJhbGciOiJIUzI1NiJ9", "Bearer [redacted]"),
    ("Authorization: Bearer abcdef0123456789abcdef", "abcdef0123456789abcdef", "Authorization: [redacted]"),
    ("authorization=Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "authorization=[redacted]"),
    ('"Authorization": "token-0123456789abcdef"', "token-0123456789abcdef", '"Authorization": "[redacted]'),
    (
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "sk-ant-[redacted]",
    ),
    ("sk-proj-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx", "sk-proj-[redacted]"),
    ("use sk-AbCdEfGhIjKlMnOpQrStUvWx please", "AbCdEfGhIjKlMnOpQrStUvWx", "sk-[redacted]"),
    ("OPENAI_API_KEY=not-a-known-shape-1234", "not-a-known-shape-1234", "OPENAI_API_KEY=[redacted]"),
    ("export ANTHROPIC_API_KEY='q1w2e3r4'", "q1w2e3r4", "ANTHROPIC_API_KEY='[redacted]'"),
    ("DISCORD_BOT_TOKEN=MTAx.Gh12.abcdef", "MTAx.Gh12.abcdef", "DISCORD_BOT_TOKEN=[redacted]"),
    (
        '{"SLACK_SIGNING_SECRET": "8f742231b10e8888abcd99yyyzzz85a5"}',
        "8f742231b10e8888",
        "SLACK_SIGNING_SECRET",
    ),
    ("x-api-key: plain-gateway-key-000111", "plain-gateway-key-000111", "x-api-key: [redacted]"),
    ("postgres://relay:hunter2hunter2@db:5432/x", "hunter2hunter2", "relay:[redacted]@db"),
    ('{"token": "abc123def456"}', "abc123def456", '"token": "[redacted]"'),
    ('{"password": "correct horse"}', "correct horse", '"password": "[redacted]"'),
    ("{'secret': 's3cr3t-value'}", "s3cr3t-value", "'secret': '[redacted]'"),
    ('{"api_key": "plain-key-0001"}', "plain-key-0001", '"api_key": "[redacted]"'),
    ('{"apiKey": "plain-key-0002"}', "plain-key-0002", '"apiKey": "[redacted]"'),
    ("login with password=hunter2 now", "hunter2", "password=[redacted]"),
    ("https://x.example/cb?token=abc123&next=1", "abc123", "token=[redacted]&next=1"),
    (
        "bot MTIzNDU2Nzg5MDEyMzQ1Njc4.GhAbCd.abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
        "MTIzNDU2Nzg5MDEyMzQ1Njc4.[redacted]",
    ),
    (  # at the end of a sentence: the full stop is no part of the token
        "Your bot token is MTIzNDU2Nzg5MDEyMzQ1Njc4.GhAbCd.abcdefghijklmnopqrstuvwxyzABCDEFGHIJ.",
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
        "MTIzNDU2Nzg5MDEyMzQ1Njc4.[redacted].",
    ),
    ("key=AIzaSyA-1234567890abcdefghijklmnopqrstu", "SyA-1234567890abcdefghijklmnopqrstu", "AIza[redacted]"),
    ("maps AIzaSyA-1234567890abcdefghijklmnopqrstu ok", "SyA-1234567890abcdefghijklmnopqrstu", "AIza[redacted]"),
]


@pytest.mark.parametrize(("text", "secret", "hint"), SECRETS, ids=[s[2][:24] for s in SECRETS])
def test_redact_removes_each_secret_kind_and_keeps_a_hint(text: str, secret: str, hint: str) -> None:
    out = redact(text)
    assert secret not in out
    assert REDACTED in out
    assert hint in out


@pytest.mark.parametrize(("text", "secret", "hint"), SECRETS, ids=[s[2][:24] for s in SECRETS])
def test_redact_is_idempotent(text: str, secret: str, hint: str) -> None:
    assert redact(redact(text)) == redact(text)


def test_specific_token_keeps_its_hint_inside_an_env_assignment() -> None:
    out = redact('export GITHUB_TOKEN="ghp_16C7e42F292c6912E7710c838347Ae178B4a"')
    assert out == 'export GITHUB_TOKEN="ghp_[redacted]"'


def test_several_secrets_in_one_line_are_all_removed() -> None:
    text = "xoxb-1-2-abcdefgh and ghp_16C7e42F292c6912E7710c838347Ae178B4a and AKIAIOSFODNN7EXAMPLE"
    assert redact(text) == "xoxb-[redacted] and ghp_[redacted] and AKIA[redacted]"


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-30T15:41:23.347402Z ERROR codex_acp::thread",
        "unexpected status 401 Unauthorized: invalid x-api-key, url: http://127.0.0.1:18602/v1/responses",
        "max_tokens: 4096, input_tokens=10",
        "sessionId=e0e032f4-7a82-4d04-b7c1-dab2761ae478",
        "a task-runner-with-a-very-long-name and a risk-assessment-document",
        "The model 'claude-opus-4.5' is not available",
        "Number of request tokens has exceeded your per-minute rate limit",
        "Bearer short",
        "max_tokens=4096 tokens=12 input_tokens=10",
        '{"type": "error", "message": "no token given"}',
        "a.b.c and v1.2.3 and eyJhbGciOiJIUzI1NiJ9abc.eyJzdWIi.abcdefghijklmnopqrstuvwxyz0123",
        "PWD=/home/relay/project",
    ],
)
def test_redact_leaves_harmless_text_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(request_id: aa4beeae-214c-45f6-b1f5-04c8448eb026)", "(request_id: aa4beeae…)"),
        ("Request ID: a37ce3f9-133f-4879-93aa-5f88a8d99439", "Request ID: a37ce3f9…"),
        ('aws_request_id: "333e57e7-0578-4b48-8da0-98d2069141f0"', 'aws_request_id: "333e57e7…"'),
        ('"requestId": "0123456789abcdef0123456789abcdef"', '"requestId": "01234567…"'),
        ('"request_id": "req_011CUabcdefghijklmnop"', '"request_id": "req_011C…"'),
        ("see req_011CUabcdefghijklmnop for details", "see req_011C… for details"),
        ("x-request-id=fedcba9876543210fedcba98", "x-request-id=fedcba98…"),
    ],
)
def test_shorten_request_ids_keeps_eight_characters(text: str, expected: str) -> None:
    assert shorten_request_ids(text) == expected
    assert shorten_request_ids(expected) == expected


@pytest.mark.parametrize(
    "text",
    [
        '"request_id": "req_mock"',
        "sessionId=e0e032f4-7a82-4d04-b7c1-dab2761ae478",
        "request_id: short1",
    ],
)
def test_shorten_request_ids_leaves_short_or_unrelated_ids(text: str) -> None:
    assert shorten_request_ids(text) == text


def _every_rule(text: str) -> str:
    """The format rules without the look for their words first (what ``redact`` must equal)."""
    for pattern, replacement, _ in FORMAT_RULES:
        text = pattern.sub(replacement, text)
    return text


# Letters a case-insensitive pattern takes for "i" or "s" although they lowercase to something else.
_ODD_CASES = ["pa\u017fsword=hunter22", "ap\u0130key=abcdefgh12", "my_ap\u0131key: abcdefgh12",
              "\u017fecret = 'x1y2z3'", '{"ToKen": "abc"}', "AUTHORIZATION: Bearer abcdefghijkl",
              "Api_Key=xyz123", "X-API-KEY: k-123"]
# The Discord token's rule names no word: it is tried where its middle part (two dots around 6 or 7
# characters) stands. Tokens with either middle, at a sentence's end, in a URL, and near misses.
_DOTTED = ["MTIzNDU2Nzg5MDEyMzQ1Njc4.GhAbCdE.abcdefghijklmnopqrstuvwxyzABCDEFGHIJ is it",
           "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhAbCdE.abcdefghijklmnopqrstuvwxyzABCDEFGHIJ.",
           "see https://x.example/MTIzNDU2Nzg5MDEyMzQ1Njc4.GhAbCd.abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
           "(MTIzNDU2Nzg5MDEyMzQ1Njc4.GhAbCd.abcdefghijklmnopqrstuvwxyzABCDEFGHI)",
           "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhAbC.abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
           "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhAbCdEf.abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
           "version 1.2.3 of the relay. Then a.bcdefg.h and " + "x" * 60]


@pytest.mark.parametrize("text", [s[0] for s in SECRETS] + _ODD_CASES + _DOTTED)
def test_a_rule_is_skipped_only_where_it_could_not_have_matched(text: str) -> None:
    """``redact`` skips a rule when none of its words is in the text (most answers hold none): in
    any case, upper or lower, with the letters ``str.lower`` does not make what the pattern takes."""
    for variant in (text, text.upper(), text.lower(), text.swapcase(), f"é {text} →"):
        assert redact(variant) == _every_rule(variant)


def test_a_long_s_in_a_credentials_name_is_read_as_s_as_before() -> None:
    assert redact("pa\u017fsword=hunter22") == f"pa\u017fsword={REDACTED}"


@pytest.mark.parametrize(("text", "at"), [
    ("the key is sk-ant-api0", 11),
    ("one two three Bearer\u2003abc", 14),  # any whitespace between the word and its token
    ("send it as BEARER   ", 11),
    ("Authorization: Bearer\n\nxyz", 15),
    ("bot 123456789:AAH", 4),
    ("AKIAIOSF", 0),
    ("filler " * 50 + "xoxb-12", 350),  # past the last 256 characters of a long answer
    ("see x-sk-abc", None),  # not a token's start: part of a longer word
    ("words here then-ghp_abc", None),
    ("a bearer b c", None),
    ("old sk-abc then more words", None),
])
def test_an_unfinished_token_is_found_where_it_begins(text: str, at: int | None) -> None:
    """A token's start at the end of a streamed text is held back: the pattern is tried only in the last
    two words (a token runs to the end; ``Bearer`` has one run of whitespace after it)."""
    assert unfinished_secret_at(text) == at
