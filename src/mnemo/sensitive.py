"""Secrets and personal identifiers in a text: found, and masked.

Each kind is found by a loose pattern and confirmed by a well-kept library, so that ordinary
numbers (dates, prices, step counts, order numbers) stay as they are:

- credentials: the regular expressions of detect-secrets' plugins (keys and tokens of AWS,
  Stripe, GitHub, GitLab, Slack, OpenAI, …, and passwords in URLs such as
  postgres://u:p@h/db), used in-process on the text (no files, no verification, no
  network); a PEM private key block from its BEGIN line to its END line; a password or a
  key stated as such ("my password is hunter2", "the API key is …");
- cards: 13 to 19 digits that pass the Luhn check and start as a payment card does;
- bank accounts: an IBAN whose checksum holds (python-stdnum);
- government ids: a US social security number (written 078-05-1120), a Spanish DNI or NIE,
  an Italian codice fiscale, a French NIR, and — named as such, their checksums being weak —
  a German Steuer-ID or a Dutch BSN (python-stdnum);
- phone numbers: what phonenumbers' matcher finds valid, written with a leading + (any
  country) or as the US writes them ((415) 555-2671, 415-555-2671): year ranges, times and
  order numbers are not taken for phone numbers;
- email addresses.

A mask keeps only what a person would recognise: "[card ending 4242]", "[bank account ending
3000]" (never more than the last four digits), "[government id]", "[credential]",
"[phone number]", "[email address]".
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import phonenumbers
from detect_secrets.plugins import (
    artifactory,
    aws,
    azure_storage_key,
    basic_auth,
    discord,
    github_token,
    gitlab_token,
    jwt,
    mailchimp,
    npm,
    openai,
    pypi_token,
    sendgrid,
    slack,
    square_oauth,
    stripe,
    telegram_token,
    twilio,
)
from stdnum import iban, luhn
from stdnum.de import idnr
from stdnum.es import dni, nie
from stdnum.fr import nir
from stdnum.it import codicefiscale
from stdnum.nl import bsn
from stdnum.us import ssn

from .domain import GateAction, GateNotice, GatePolicy, InvalidInput, Message, Sensitive, gate_notices

log = logging.getLogger(__name__)

# -- credentials ---------------------------------------------------------------------------

_PLUGINS: tuple[Any, ...] = (
    artifactory.ArtifactoryDetector,
    aws.AWSKeyDetector,
    azure_storage_key.AzureStorageKeyDetector,
    discord.DiscordBotTokenDetector,
    github_token.GitHubTokenDetector,
    gitlab_token.GitLabTokenDetector,
    jwt.JwtTokenDetector,
    mailchimp.MailchimpDetector,
    npm.NpmDetector,
    openai.OpenAIDetector,
    pypi_token.PypiTokenDetector,
    sendgrid.SendGridDetector,
    slack.SlackDetector,
    square_oauth.SquareOAuthDetector,
    stripe.StripeDetector,
    telegram_token.TelegramBotTokenDetector,
    twilio.TwilioKeyDetector,
)
# the plugins' own patterns, read once: a match's whole span is the secret (some plugins
# capture only a prefix); a password in a URL masks the whole URL
_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = tuple(p for cls in _PLUGINS for p in cls.denylist)
_URL_PASSWORDS: tuple[re.Pattern[str], ...] = tuple(basic_auth.BasicAuthDetector.denylist)
_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
    re.DOTALL,
)
# keys whose prefix names them, beyond detect-secrets' plugins: GitHub's fine-grained tokens,
# Anthropic's and OpenAI's project keys, Google's API keys, OAuth client secrets and access
# tokens, Hugging Face's, Groq's, Replicate's, Perplexity's, xAI's, Stripe's webhook secrets,
# Shopify's, DigitalOcean's, Notion's, Linear's and npm's tokens
_KEY_PREFIXES = re.compile(
    r"(?<![\w-])(?:github_pat_[A-Za-z0-9_]{22,}|sk-ant-[A-Za-z0-9_-]{20,}|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"
    r"|sk-[A-Za-z0-9]{32,}|AIza[0-9A-Za-z_-]{35}|GOCSPX-[A-Za-z0-9_-]{20,}|ya29\.[A-Za-z0-9_-]{20,}"
    r"|hf_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{20,}|r8_[A-Za-z0-9]{20,}|pplx-[A-Za-z0-9]{20,}|xai-[A-Za-z0-9]{20,}"
    r"|whsec_[A-Za-z0-9+/=]{20,}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{20,}|dop_v1_[a-f0-9]{40,}"
    r"|ntn_[A-Za-z0-9]{20,}|lin_api_[A-Za-z0-9]{20,}|npm_[A-Za-z0-9]{30,}"
    r"|sk-or-v1-[A-Za-z0-9]{20,}|key-[0-9a-f]{32}|pypi-AgE[A-Za-z0-9_-]{50,}|dckr_pat_[A-Za-z0-9_-]{20,}"
    r"|dapi[0-9a-f]{32}|ATATT3[A-Za-z0-9_=-]{20,}|sq0atp-[A-Za-z0-9_-]{20,}|sq0csp-[A-Za-z0-9_-]{20,}"
    r"|\d{8,10}:AA[A-Za-z0-9_-]{30,}|sbp_[0-9a-f]{40}|fw_[A-Za-z0-9]{20,}|[Aa][Kk][Ii][Aa][0-9A-Za-z]{16}"
    r"|AccountKey=[A-Za-z0-9+/]{40,}={0,2})"
)
# a JSON web token, all three parts (a pattern that names its first two leaves the signature)
_JWT = re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}")
# "login: bob / pass: …": a pass given right after a login
_LOGIN_PASS = re.compile(
    r"\b(?:login|user(?:name)?|user id)\s*[:=]\s*\S+\s*[/,;|]?\s*\bpass(?:word)?\s*[:=]\s*"
    r"(?P<bare>[^\s\"']{4,})",
    re.IGNORECASE,
)
# "my password is hunter2", "password for the wifi was Tr0ub4dor&3", "Mein Passwort ist …",
# "mon mot de passe est …", "mi contraseña es …", "my pw is …" (a PIN is not taken: it opens
# nothing without the card)
_PASSWORD_WORD = (
    r"(?:password|passwort|kennwort|passwd|passphrase|passcode|pw|pwd|mot de passe|contraseña"
    r"|contrasena|clave|senha|parola d'ordine|wachtwoord|hasło|haslo|пароль|şifre(?:m|si)?|sifre(?:m|si)?"
    r"|lösenord|losenord|adgangskode|passord|salasana(?:ni)?|heslo|jelszó|jelszavam|jelszo|parola mea"
    r"|κωδικός|κωδικος|συνθηματικό|كلمة المرور|كلمة السر|पासवर्ड|mật khẩu|mat khau|kata sandi|סיסמה|הסיסמה)"
)
# the gap between the word and its verb: no sentence's end (a full stop inside a name, as in
# "gmail.com", is not one; a question may come before "it's")
_GAP = r"(?:[^.\n!]|\.(?=\S)){0,30}?"
_STATED_PASSWORD = re.compile(
    rf"\b{_PASSWORD_WORD}\b{_GAP}"
    r"(?:\b(?:is|was|it's|it is|ist|war|lautet|heißt|est|était|es|era|é|è|är|var|er|jest|это|je|on|este"
    r"|είναι|هي|là|היא|—)(?!\w)"
    r"|[:=])[ \t]*(?:[\"“‘«'](?P<quoted>[^\"”’»'\n]{4,80})[\"”’»']"
    # a bare value holds a digit or a sign (else the gap grows: "password to my bank? It's …")
    r"|[\"'“‘«]?(?P<bare>(?=[^\s\"'”’»]*[^\s\"'”’»A-Za-z])[^\s\"'”’»]+))",
    re.IGNORECASE,
)
# "wifi password Wifi2024pw", "hasło to Lato2024!": the word right before a value of letters
# and digits
_NAMED_PASSWORD = re.compile(
    rf"\b{_PASSWORD_WORD}[ \t]+(?:(?:to|jest|saya|của tôi|mera|मेरा)[ \t]+)?[(\[]?"
    r"(?P<bare>(?=[^\s]*\d)(?=[^\s]*[^\W\d])[^\s\"'”’»]{6,})",
    re.IGNORECASE,
)
# Chinese, Japanese and Korean, which set no space between words: "我的密码是Sommer2024"
_CJK_PASSWORD = re.compile(
    r"(?:密码|密碼|口令|パスワード|暗証番号|비밀번호|암호|รหัสผ่าน(?:ของฉัน)?)\s*(?:是|為|为|は|:|=|은|는|คือ)\s*"
    r"(?P<bare>[A-Za-z0-9!#$%&*+\-./:;<=>?@^_~]{4,})"
)
# an assignment in a credentials or .env file: DB_PASSWORD=…, aws_secret_access_key = …,
# export GITHUB_TOKEN="…": a name of words joined by "_" (at most eight, each at most 40
# characters: no backtracking over a long run), one of them PASSWORD, PASSWD, PWD, SECRET,
# TOKEN or a KEY, or PASS as its last; with ":" only where the name has a "_" (prose says
# "pass: …"); a quoted value runs to its closing quote
_SECRET_WORD = r"(?:password|passwd|pwd|secret|token|apikey|api_key|access_key|private_key|auth_key)"
_SEGMENT = r"[A-Za-z0-9]{1,40}"
_ASSIGNED = re.compile(
    rf"(?<![\w-])(?:export\s+)?(?P<name>(?:{_SEGMENT}_){{0,8}}(?:{_SECRET_WORD}(?:_{_SEGMENT}){{0,8}}|pass))"
    r"(?![\w-])\s*(?P<sign>[=:])\s*"
    r"(?:\"(?P<dq>[^\"\n]{1,200})\"|'(?P<sq>[^'\n]{1,200})'|(?P<bare>[^\s\"',;]+))",
    re.IGNORECASE,
)
# "the API key is …", "aws secret: …": a token-like value (letters and digits, 16 or more);
# "aws secret wJalr…": with no verb, a long run of letters, digits, "/" and "+" (32 or more)
_STATED_KEY = re.compile(
    r"\b(?:secret|token|key)\b(?! fingerprint)(?:[^.\n?!]{0,30}?(?:\bis\b|[:=])"
    r"\s*[\"'“‘]?([A-Za-z0-9/+_\-.=]{16,})|\s+([A-Za-z0-9/+]{32,}))",
    re.IGNORECASE,
)


_TEMPLATE = "<{[$%*"  # "password = <your_password>" names none


def _looks_like_password(value: str) -> bool:
    """A stated password is taken as one when it has a digit or a sign in it: "my password is
    too short" names no password."""
    value = value.rstrip(".,;:!?)")
    if len(value) < 4 or value[0] in _TEMPLATE + "/" or value.endswith("%"):  # a path, a share
        return False
    return any(not c.isalpha() for c in value)


# what an assigned value may be without being a secret: words that stand in for one in examples
_NOT_SECRETS = frozenset(
    "true false null none yes no required optional changeme password passwd secret admin root test"
    " example default token".split()
)


def _assigned_value(m: re.Match[str]) -> tuple[int, int]:
    """The span of an assignment's value: inside its quotes, or the bare word less a full stop."""
    group = next(g for g in ("dq", "sq", "bare") if m[g] is not None)
    start = m.start(group)
    return start, start + len(m[group] if group != "bare" else m[group].rstrip(".,;:!?"))


def _looks_assigned(m: re.Match[str], text: str) -> bool:
    """A password's value is any word ("DB_PASSWORD=hunter"); a secret's, token's, key's or a
    pass's is a word of letters and digits or a long one ("MAX_TOKENS=4096", "first_pass:
    done" name none). Never a path, a call, a placeholder (YOUR_TOKEN, <…>, ${…}) or a stand-in
    word ("secret")."""
    name, value = m["name"], text[slice(*_assigned_value(m))]
    if m["sign"] == ":" and "_" not in name:
        return False
    placeholder = bool(re.fullmatch(r"[A-Z_]+", value)) or value.lower() in _NOT_SECRETS
    placeholder |= value[:1] in _TEMPLATE + "/~.("
    if len(value) < 4 or placeholder or "(" in value or ")" in value:
        return False
    if re.search("password|passwd|pwd", name, re.IGNORECASE):
        return True
    return len(value) >= 16 or (any(c.isdigit() for c in value) and any(c.isalpha() for c in value))


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=~")


def _whole(text: str, start: int, end: int) -> tuple[int, int]:
    """A key's span grown to the whole token around it: a pattern that names a prefix and some
    characters (Stripe's 24) must not leave the rest of a longer key behind. What a pattern
    takes around the key (a space, a quote) is left out first; a full stop ends it."""
    while start < end and text[start] not in _TOKEN_CHARS:
        start += 1
    while end > start and text[end - 1] not in _TOKEN_CHARS:
        end -= 1
    while start > 0 and text[start - 1] in _TOKEN_CHARS:
        start -= 1
    while end < len(text) and text[end] in _TOKEN_CHARS:
        end += 1
    return start, end


def _credentials(text: str) -> Iterator[tuple[int, int]]:
    for m in _PEM.finditer(text):
        yield m.span()
    for m in _JWT.finditer(text):
        yield m.span()
    for m in _LOGIN_PASS.finditer(text):
        if m["bare"].lower().strip("`*") not in _NOT_SECRETS and m["bare"][:1] not in _TEMPLATE:
            yield m.span("bare")
    for pattern in (*_SECRET_PATTERNS, _KEY_PREFIXES):
        grown = (0, 0)
        for m in pattern.finditer(text):
            if grown[0] <= m.start() < grown[1]:
                continue  # inside a key already grown to its whole token: not scanned again
            grown = _whole(text, *m.span())
            yield grown
    for m in _ASSIGNED.finditer(text):
        if _looks_assigned(m, text):
            yield _assigned_value(m)
    for pattern in _URL_PASSWORDS:
        for m in pattern.finditer(text):
            yield _token_around(text, *m.span())
    for m in _STATED_PASSWORD.finditer(text):
        if m["quoted"] is not None and not m["quoted"].startswith(tuple(_TEMPLATE)):
            yield m.span("quoted")  # quoted: a phrase is a passphrase, letters alone or not
        elif m["bare"] is not None and _looks_like_password(m["bare"]):
            yield m.start("bare"), m.start("bare") + len(m["bare"].rstrip(".,;:)"))
    for pattern in (_NAMED_PASSWORD, _CJK_PASSWORD):
        for m in pattern.finditer(text):
            if _looks_like_password(m["bare"]):
                yield m.start("bare"), m.start("bare") + len(m["bare"].rstrip(".,;:)"))
    for m in _STATED_KEY.finditer(text):
        group = 1 if m.group(1) is not None else 2
        value = m.group(group)
        url = value.startswith("/") or "//" in value or value.lower().startswith("www.")
        if not url and any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            yield m.span(group)


def _token_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The run of non-space characters holding [start, end) (a whole URL)."""
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return start, end


# -- numbers confirmed by a checksum -------------------------------------------------------

# 13 to 19 digits with spaces or dashes between, or four groups of four with dots
_CARD = re.compile(
    r"(?<![\w.,/-])(?:\d(?:(?: {1,2}|-|\t|\n| - |·|-\n)?\d){12,18}|\d{4}([./_,])\d{4}\1\d{4}\1\d{4})"
    r"(?!\w|-\d|[.,]\d|/(?!\d\d\b))"  # an expiry may follow ("…0004/12/27")
)
# 13 to 19 digits glued to letters or signs ("x4111111111111111x", "id_4111…", "no.4111…")
_CARD_GLUED = re.compile(r"(?<![\d/])(?<!\d[.,])\d{13,19}(?![\d]|[.,]\d)")  # no path, no decimals
# a card followed by its security code ("…-0004-123"): the number is a prefix of the digits
_CARD_RUN = re.compile(r"(?<![\w.,/-])\d(?:(?: {1,2}|-)?\d){15,22}(?![\w])")
_IBAN = re.compile(
    r"\b[A-Z]{2}\d{2}(?:[ ._-]?[A-Z0-9]{4}){2,7}(?:[ ._-]?[A-Z0-9]{1,3})?(?![A-Z0-9])", re.IGNORECASE
)
_SSN = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
_DNI = re.compile(r"\b[XYZ]?\d{7,8}-?[A-Z]\b")
_CODICE_FISCALE = re.compile(r"\b[A-Z]{6}\d{2}[A-Z]\d{2}[A-Z]\d{3}[A-Z]\b")
_NIR = re.compile(r"(?<![\w-])[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}(?![\w-])")
# a social security number written without its dashes: only where the text names it
_NAMED_SSN = re.compile(
    r"\b(?:ssn|social(?: security)?(?: number| no\.?| #)?)(?:\b|(?=\d))[^\d\n]{0,20}"
    r"(?<!\d)(\d{3}([ ./-]?)\d{2}\2\d{4})(?!\d)",
    re.IGNORECASE,
)
# weak checksums (one number in ten passes): only where the text names them
_NAMED_ID = re.compile(
    r"\b(?:steuer-?id|steuerliche identifikationsnummer|identifikationsnummer|idnr|bsn|burgerservicenummer)"
    r"\b[^\d\n]{0,20}(\d(?:[ .]?\d){8,10})\b",
    re.IGNORECASE,
)


def _digits(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


def _card_number(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn.is_valid(digits)


def _cards(text: str) -> Iterator[tuple[int, int]]:
    for m in _CARD.finditer(text):
        if _card_number(_digits(m.group())):
            yield m.span()
    for m in _CARD_GLUED.finditer(text):
        if _card_number(m.group()):
            yield m.span()
    for m in _CARD_RUN.finditer(text):  # the card's own groups, before what follows them
        groups = list(re.finditer(r"\d+", m.group()))
        for last in range(len(groups) - 1, 0, -1):
            if _card_number("".join(g.group() for g in groups[:last])):
                yield m.start(), m.start() + groups[last - 1].end()
                break


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    for m in _IBAN.finditer(text):
        value = m.group()
        while value:  # the pattern may have taken a word after the number: shorten it
            if iban.is_valid(re.sub(r"[ ._-]", "", value)):
                yield m.start(), m.start() + len(value)
                break
            kept = value.rstrip(" ._-")
            cut = max(kept.rfind(" "), kept.rfind("-"), kept.rfind("."), kept.rfind("_"))
            value = value[:cut] if cut > 0 else ""


def _ssn_valid(value: str) -> bool:
    # stdnum refuses the numbers once printed in advertisements (078-05-1120): they are
    # social security numbers all the same
    return ssn.is_valid(value) or ssn.format(value) in ssn._ssn_blacklist


def _government_ids(text: str) -> Iterator[tuple[int, int]]:
    checks = (
        (_SSN, _ssn_valid),
        (_DNI, lambda v: dni.is_valid(v) or nie.is_valid(v)),
        (_CODICE_FISCALE, codicefiscale.is_valid),
        (_NIR, nir.is_valid),
    )
    for pattern, valid in checks:
        for m in pattern.finditer(text):
            if valid(m.group()):
                yield m.span()
    for m in _NAMED_ID.finditer(text):
        if idnr.is_valid(m.group(1)) or bsn.is_valid(m.group(1)):
            yield m.span(1)
    for m in _NAMED_SSN.finditer(text):
        if _ssn_valid(_digits(m.group(1))):
            yield m.span(1)


# -- phones and addresses ------------------------------------------------------------------

# a number written as one: with a leading + (any country), or as the US and Canada write them
_US_PHONE = re.compile(r"^(?:1[ .-]?)?(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}$")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")


def _phones(text: str) -> Iterator[tuple[int, int]]:
    for match in phonenumbers.PhoneNumberMatcher(text, "US", phonenumbers.Leniency.VALID):
        if match.raw_string.startswith("+") or _US_PHONE.match(match.raw_string):
            yield match.start, match.end


def _emails(text: str) -> Iterator[tuple[int, int]]:
    for m in _EMAIL.finditer(text):
        yield m.span()


# -- findings and masks --------------------------------------------------------------------

_FINDERS = (
    (Sensitive.CREDENTIAL, _credentials),
    (Sensitive.CARD, _cards),
    (Sensitive.BANK_ACCOUNT, _ibans),
    (Sensitive.GOVERNMENT_ID, _government_ids),
    (Sensitive.EMAIL, _emails),
    (Sensitive.PHONE, _phones),
)


@dataclass(frozen=True, slots=True)
class Finding:
    kind: Sensitive
    start: int
    end: int


def find(text: str) -> list[Finding]:
    """The sensitive values in `text`, in order, none overlapping: where two overlap, the
    kind found first in _FINDERS wins (a card is not also a phone number). The text is read
    as `normalised` gives it (full-width digits, no-break and thin spaces, a zero-width
    character inside a key), each finding's span that of the characters it came from."""
    plain, origin = normalised(text)
    taken: list[Finding] = []
    for kind, finder in _FINDERS:
        for start, end in finder(plain):
            if not any(start < f.end and f.start < end for f in taken):
                taken.append(Finding(kind, start, end))
    if origin is not None:  # back to the text's own characters
        taken = [Finding(f.kind, origin[f.start], origin[f.end - 1] + 1) for f in taken]
    return sorted(taken, key=lambda f: f.start)


# characters that show nothing: dropped before a value is looked for
_INVISIBLE = frozenset("\u00ad\u180e\u200b\u200c\u200d\u2060\ufeff")


def normalised(text: str) -> tuple[str, list[int] | None]:
    """The text as the finders read it: each character in its NFKC form ("４２４２" is
    "4242"), a digit of any script as its ASCII digit ("٤" is "4"), every dash a hyphen and
    every space separator a plain space, the invisible characters left out; and, per
    character of it, the index of the character of `text` it came from (None when the text is
    plain ASCII, which reads as it is)."""
    if text.isascii():
        return text, None
    out: list[str] = []
    origin: list[int] = []
    for i, c in enumerate(text):
        if c in _INVISIBLE:
            continue
        out.append(form := _READ_AS.get(c) or _plain(c))
        origin += [i] * len(form)
    return "".join(out), origin


def _plain(c: str) -> str:
    kind = unicodedata.category(c)
    if kind == "Zs":
        return " "
    if kind == "Pd":
        return "-"
    if kind == "Nd":
        return str(unicodedata.decimal(c))
    return unicodedata.normalize("NFKC", c)


_READ_AS: dict[str, str] = {}  # the ASCII characters read as themselves (the common case, fast)
_READ_AS.update((chr(i), chr(i)) for i in range(128))


def placeholder(kind: Sensitive, value: str) -> str:
    """What stands for a masked value: the last four digits of a card or an account at most."""
    if kind in (Sensitive.CARD, Sensitive.BANK_ACCOUNT):
        noun = "card" if kind == Sensitive.CARD else "bank account"
        return f"[{noun} ending {_digits(normalised(value)[0])[-4:]}]"
    return _PLACEHOLDERS[kind]


_PLACEHOLDERS = {
    Sensitive.CREDENTIAL: "[credential]",
    Sensitive.GOVERNMENT_ID: "[government id]",
    Sensitive.PHONE: "[phone number]",
    Sensitive.EMAIL: "[email address]",
}


def mask(text: str, kinds: Collection[Sensitive], findings: list[Finding] | None = None) -> str:
    """`text` with the values of these kinds replaced by their placeholders."""
    out, at = [], 0
    for f in find(text) if findings is None else findings:
        if f.kind in kinds:
            out += [text[at : f.start], placeholder(f.kind, text[f.start : f.end])]
            at = f.end
    return "".join(out) + text[at:]


@dataclass(frozen=True, slots=True)
class Screened:
    """A text as the gate lets it through: `masked` with every kind the policy does not
    allow masked, `kinds` found in it (each once), and the strictest action among them."""

    text: str
    masked: str
    kinds: tuple[Sensitive, ...]
    policy: GatePolicy

    def with_action(self, action: GateAction) -> list[Sensitive]:
        return [k for k in self.kinds if self.policy.action(k) == action]

    @property
    def redacted(self) -> str:
        """The text with only the kinds the policy redacts masked (a memory's text)."""
        return mask(self.text, set(self.with_action(GateAction.REDACT)))


def screen(text: str, policy: GatePolicy) -> Screened:
    findings = find(text)
    kinds = tuple(dict.fromkeys(f.kind for f in findings))
    masked_kinds = {k for k in kinds if policy.action(k) != GateAction.ALLOW}
    return Screened(text, mask(text, masked_kinds, findings) if masked_kinds else text, kinds, policy)


def tally(found: Collection[tuple[Sensitive, GateAction]]) -> dict[str, dict[str, int]]:
    """Counts by category and action (what a job result and a log line may say)."""
    out: dict[str, dict[str, int]] = {}
    for (kind, action), n in Counter(found).items():
        out.setdefault(str(kind), {})[str(action)] = n
    return out


# an echo is masked only of a value at least this long (normalised), standing alone: a shorter
# one would mask every word it is part of (a stated password is at least this long)
ECHO_MIN = 4


def screen_messages(
    messages: Sequence[Message], policy: GatePolicy
) -> tuple[list[Message], list[tuple[Sensitive, GateAction]], dict[str, Sensitive]]:
    """Messages as they are stored: every value the policy does not allow masked (under
    `block`, `redact` and `hold` alike: the message store is not reviewed), what was masked,
    by category and action, and the values masked (normalised) with their kinds. A value found
    in one message is masked wherever it stands in the others too: "my password is
    Tr0ub4dor&3" makes the assistant's "I'll keep Tr0ub4dor&3 safe" a credential as well,
    though that sentence alone names none (`echoed` masks the conversation's earlier
    messages alike)."""
    found = [find(m.content) for m in messages]
    values = {
        plain: f.kind
        for m, fs in zip(messages, found, strict=True)
        for f in fs
        if policy.action(f.kind) != GateAction.ALLOW
        and len(plain := normalised(m.content[f.start : f.end])[0].strip()) >= ECHO_MIN
    }
    out, done = [], []
    for m, fs in zip(messages, found, strict=True):
        fs = sorted([*fs, *_echoes(m.content, values, fs)], key=lambda f: f.start)
        kinds = tuple(dict.fromkeys(f.kind for f in fs if policy.action(f.kind) != GateAction.ALLOW))
        done += [(k, policy.action(k)) for k in kinds]
        masked = mask(m.content, set(kinds), fs) if kinds else m.content
        out.append(m if masked == m.content else replace(m, content=masked))
    return out, done, values


def echoed(messages: Sequence[Message], values: dict[str, Sensitive]) -> list[tuple[str, str]]:
    """(id, masked content) of each stored message where one of `values` (what the gate found
    in a later turn, from `screen_messages`) stands: what the store rewrites."""
    out = []
    for m in messages:
        echoes = _echoes(m.content, values, [])
        if echoes and m.id:
            out.append((m.id, mask(m.content, {f.kind for f in echoes}, echoes)))
    return out


def _echoes(text: str, values: dict[str, Sensitive], taken: Sequence[Finding]) -> list[Finding]:
    """Where `text` (read normalised, as `find` reads it, and in either case: "TR0UB4DOR&3"
    repeats "Tr0ub4dor&3") repeats one of `values` (the longest first) standing alone (no
    letter or digit right before or after it), outside `taken`."""
    plain, origin = normalised(text)
    plain = _lower(plain)
    out: list[Finding] = []
    used = bytearray(len(text))  # the characters a finding already covers: linear, however many
    for f in taken:
        used[f.start : f.end] = b"\1" * (f.end - f.start)
    for value in sorted(values, key=len, reverse=True):
        kind, value = values[value], _lower(value)
        at = plain.find(value)
        while at >= 0:
            end = at + len(value)
            alone = (at == 0 or not plain[at - 1].isalnum()) and (
                end == len(plain) or not plain[end].isalnum()
            )
            start, stop = (at, end) if origin is None else (origin[at], origin[end - 1] + 1)
            if alone and not any(used[start:stop]):
                out.append(Finding(kind, start, stop))
                used[start:stop] = b"\1" * (stop - start)
            at = plain.find(value, at + 1)
    return out


def _lower(text: str) -> str:
    """`text` in lower case, character for character (a character whose lower case is longer,
    as "İ", is kept), so that its places are the text's."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := c.lower()) == 1 else c for c in text)


def blocked_message(kinds: Collection[Sensitive]) -> str:
    """Why a memory was refused: its categories, never its value."""
    return f"this memory holds a {' and a '.join(_NOUNS[k] for k in kinds)}, which the gate never stores"


_NOUNS = {
    Sensitive.CREDENTIAL: "credential",
    Sensitive.CARD: "payment card number",
    Sensitive.BANK_ACCOUNT: "bank account number",
    Sensitive.GOVERNMENT_ID: "government id",
    Sensitive.PHONE: "phone number",
    Sensitive.EMAIL: "email address",
}


def refused_name(what: str, text: str, policy: GatePolicy) -> str | None:
    """Why a name the person chose (an agent's, an API key's label, a conversation id) is refused:
    it holds a value of a kind the person's gate does not allow (masking it would make another
    name, or two names one), named by its kind, never the value; None when it holds none."""
    found = screen(text, policy)
    kinds = [k for k in found.kinds if policy.action(k) != GateAction.ALLOW]
    if not kinds:
        return None
    return (
        f"{what} holds a {' and a '.join(_NOUNS[k] for k in kinds)}, which your sensitive-data gate"
        " keeps out of names: choose another"
    )


def check_name(what: str, text: str, policy: GatePolicy) -> str:
    """`text`, or InvalidInput saying why the gate refuses it (see refused_name)."""
    problem = refused_name(what, text, policy)
    if problem:
        raise InvalidInput(problem)
    return text


@dataclass(frozen=True, slots=True)
class FactGate:
    """What the gate makes of a memory's text: `text` to store (the kinds the policy redacts
    masked), the kinds that block it or hold it for review, and every action taken."""

    text: str
    blocked: tuple[Sensitive, ...]
    held: tuple[Sensitive, ...]
    done: tuple[tuple[Sensitive, GateAction], ...]

    @property
    def hold_reason(self) -> str:
        return "holds a " + " and a ".join(_NOUNS[k] for k in self.held)

    @property
    def note(self) -> str | None:
        """What the memory's event says of the gate: categories and actions, never a value."""
        said = [f"{k} {_DONE[a]}" for k, a in self.done]
        return "sensitive data: " + ", ".join(said) if said else None

    @property
    def reason(self) -> str | None:
        """The reason of a memory created through the gate."""
        held = f"held for review: {self.hold_reason}" if self.held else None
        return "; ".join(filter(None, [held, self.note])) or None


_DONE = {GateAction.BLOCK: "blocked", GateAction.REDACT: "redacted", GateAction.HOLD: "held"}


def gate_fact(text: str, policy: GatePolicy) -> FactGate:
    s = screen(text, policy)
    done = tuple((k, policy.action(k)) for k in s.kinds if policy.action(k) != GateAction.ALLOW)
    blocked = tuple(s.with_action(GateAction.BLOCK))
    return FactGate(s.redacted, blocked, tuple(s.with_action(GateAction.HOLD)), done)


def screened_messages(
    user_id: str, messages: Sequence[Message], policy: GatePolicy, conversation_id: str | None = None
) -> tuple[list[Message], list[GateNotice], dict[str, Sensitive]]:
    """`screen_messages`, with the notices the user's audit log keeps of what was masked (and
    the log line: counts by category and action, never a value)."""
    out, done, values = screen_messages(messages, policy)
    if done:
        log.info("sensitive-data gate, messages of user %s: %s", user_id, tally(done))
    return out, gate_notices("message", done, conversation_id), values
