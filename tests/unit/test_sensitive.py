"""The detector and its masks: realistic values are found, ordinary numbers are not."""

from __future__ import annotations

import pytest

from mnemo.domain import GateAction, GatePolicy, InvalidInput, Message, Sensitive
from mnemo.sensitive import ECHO_MIN, echoed, find, gate_fact, mask, screen, screen_messages
from tests.sensitive_cases import MASKS, ORDINARY, SAID

EVERYTHING = set(Sensitive)


@pytest.mark.parametrize(("text", "needle", "kind"), SAID)
def test_each_realistic_value_is_found_and_masked_whole(text, needle, kind):
    assert [f.kind for f in find(text)] == [Sensitive(kind)]
    masked = mask(text, EVERYTHING)
    assert needle not in masked
    assert masked.count("[") == 1
    if kind in MASKS:
        assert MASKS[kind] in masked


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_numbers_stay_as_they_are(text):
    assert find(text) == []
    assert mask(text, EVERYTHING) == text


def test_a_mask_keeps_the_last_four_digits_at_most():
    masked = mask("4111 1111 1111 1111 and GB82 WEST 1234 5698 7654 32", EVERYTHING)
    assert masked == "[card ending 1111] and [bank account ending 5432]"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("call +1 415 555 2671 tomorrow", Sensitive.PHONE),
        ("or (415) 555-2671", Sensitive.PHONE),
        ("Ruf an: +49 30 901820", Sensitive.PHONE),
        ("write to bob.smith@example.com.", Sensitive.EMAIL),
        ("Steuer-ID 36574261809", Sensitive.GOVERNMENT_ID),
        ("codice fiscale RCCMNL83S18D969H", Sensitive.GOVERNMENT_ID),
        ("NIE X1234567L", Sensitive.GOVERNMENT_ID),
    ],
)
def test_phones_addresses_and_more_ids(text, kind):
    assert [f.kind for f in find(text)] == [kind]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "ünïcödé 😀 4242 4242 4242 4241",  # fails Luhn
        "the API key is in the drawer",
        "password = <your_password>",
        "a year range (1623-1644) and a time 15:36:06.0000000",
        "9" * 10_000,
    ],
)
def test_edges_find_nothing(text):
    assert find(text) == []


def test_a_private_key_without_its_end_line_is_masked_to_the_end():
    text = "here:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQ29tbWVudA"
    assert mask(text, EVERYTHING) == "here:\n[credential]"


def test_the_policy_decides_what_is_masked_in_a_message_and_what_in_a_memory():
    text = "card 4242 4242 4242 4242, mail bob@example.com, key sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    defaults = screen(text, GatePolicy())
    assert defaults.masked == "card [card ending 4242], mail bob@example.com, key [credential]"
    gated = gate_fact(text, GatePolicy())
    assert gated.blocked == (Sensitive.CREDENTIAL,)
    held = gate_fact("card 4242 4242 4242 4242", GatePolicy().changed({"card": "hold"}))
    assert held.held == (Sensitive.CARD,) and held.text == "card 4242 4242 4242 4242"
    assert held.reason == "held for review: holds a payment card number; sensitive data: card held"
    allowed = GatePolicy().changed({"card": "allow", "email": "redact"})
    assert screen(text, allowed).masked == "card 4242 4242 4242 4242, mail [email address], key [credential]"


def test_a_policy_keeps_only_what_differs_from_the_defaults():
    policy = GatePolicy().changed({"card": "allow", "credential": "block"})
    assert policy.choices() == {"card": "allow"}
    assert policy.action(Sensitive.CARD) == GateAction.ALLOW
    assert policy.changed({"card": "redact"}).choices() == {}
    assert GatePolicy().actions() == {
        "credential": "block",
        "card": "redact",
        "bank_account": "redact",
        "government_id": "redact",
        "phone": "allow",
        "email": "allow",
    }


@pytest.mark.parametrize(("changes", "word"), [({"cards": "allow"}, "cards"), ({"card": "shred"}, "shred")])
def test_an_unknown_category_or_action_is_refused(changes, word):
    with pytest.raises(InvalidInput, match=word):
        GatePolicy().changed(changes)


STRIPE_106 = (
    "sk_live_51Hx" + "Q7b9Zk2LmN4pR8sT1vW3yA5cE7gI9kM0oQ2sU4wY6aC8eG0iK2mO4qS6uW8yB0dF2hJ4lN6pR8tV0xZ2bD4f"
)


@pytest.mark.parametrize(
    ("text", "needle", "kind"),
    [
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "credential"),
        ("DB_PASSWORD=s3cr3t-Pa55", "s3cr3t-Pa55", "credential"),
        ('export GITHUB_TOKEN="abcd1234efgh5678"', "abcd1234efgh5678", "credential"),
        ("STRIPE_SECRET: abcdefghijklmnopq", "abcdefghijklmnopq", "credential"),
        ("SMTP_PASS=pl4inletters", "pl4inletters", "credential"),
        ('DB_PASSWORD="correct horse battery staple"', "horse battery staple", "credential"),  # quoted: whole
        ("DB_PASSWORD=ab#cdefgh12", "cdefgh12", "credential"),  # a # inside is not a comment
        ("API_KEY=XK7Q9PLM2RZ4", "XK7Q9PLM2RZ4", "credential"),
        ("Mein Passwort ist Sonne#2024", "Sonne#2024", "credential"),
        ("Mon mot de passe est Soleil!88", "Soleil!88", "credential"),
        ("Mi contraseña es Gato_2023", "Gato_2023", "credential"),
        ("my pw is kitty77!", "kitty77!", "credential"),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
            "11ABCDEFG0123456789",
            "credential",
        ),
        ("use sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOp", "credential"),
        ("maps key AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "SyA1b2C3d4E5f6G7h8", "credential"),
        ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 is my token", "AbCdEfGhIjKlMnOpQr", "credential"),
        (f"the shop key {STRIPE_106} works", STRIPE_106[-40:], "credential"),  # no tail is kept
        ("card ４２４２ ４２４２ ４２４２ ４２４２", "４２４２ ４２４２", "card"),  # full-width digits
        ("card 4242\u00a04242\u00a04242\u00a04242", "4242\u00a04242", "card"),  # no-break spaces
        ("card 4242\u20094242\u20094242\u20094242", "4242\u20094242", "card"),  # thin spaces
        ("card 4242.4242.4242.4242", "4242.4242", "card"),
        ("IBAN DE89-3704-0044-0532-0130-00", "3704-0044-0532", "bank_account"),
        ("iban de89 3704 0044 0532 0130 00", "3704 0044 0532", "bank_account"),
        ("key AKIAZ7QPLM\u200bXV4RTY2KWB", "XV4RTY2KWB", "credential"),  # a zero-width space inside
        ("my SSN is 078051120", "078051120", "government_id"),
        # the second attack round
        ("Mein Passwort lautet Sommer2024#", "Sommer2024#", "credential"),
        ("Mijn wachtwoord is Zomer2024!", "Zomer2024!", "credential"),
        ("Moje hasło to Lato2024!", "Lato2024!", "credential"),
        ("Мой пароль: Лето2024!", "Лето2024!", "credential"),
        ("mi clave es Verano2024!", "Verano2024!", "credential"),
        ("şifrem: Yaz2024!", "Yaz2024!", "credential"),
        ("Mitt lösenord är Sommar2024!", "Sommar2024!", "credential"),
        ("我的密码是Summer2024!", "Summer2024!", "credential"),
        ("パスワードは Natsu2024! です", "Natsu2024!", "credential"),
        ("My password for gmail.com is Gmail9pass", "Gmail9pass", "credential"),
        ("The password to my bank account? It's Bank2024pw", "Bank2024pw", "credential"),
        ("wifi password Wifi2024pw", "Wifi2024pw", "credential"),
        ("my password is 'correct horse battery staple'", "horse battery", "credential"),
        ("my password is “sunshinepurple”", "sunshinepurple", "credential"),
        ("gsk_AbCdEfGhIjKlMnOpQrStUvWx0123", "AbCdEfGhIjKlMnOp", "credential"),
        ("r8_AbCdEfGhIjKlMnOpQrStUvWx0123", "AbCdEfGhIjKlMnOp", "credential"),
        ("pplx-AbCdEfGhIjKlMnOpQrStUvWx0123", "AbCdEfGhIjKlMnOp", "credential"),
        ("xai-AbCdEfGhIjKlMnOpQrStUvWx0123", "AbCdEfGhIjKlMnOp", "credential"),
        ("GOCSPX-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOp", "credential"),
        ("ya29.a0AbCdEfGhIjKlMnOpQrStUvWx0123", "AbCdEfGhIjKlMnOp", "credential"),
        ("whsec_AbCdEfGhIjKlMnOpQrStUvWx0123", "AbCdEfGhIjKlMnOp", "credential"),
        ("shpat_0123456789abcdef0123456789abcdef", "0123456789abcdef01", "credential"),
        ("dop_v1_" + "0123456789abcdef" * 4, "0123456789abcdef01", "credential"),
        ("ntn_AbCdEfGhIjKlMnOpQrStUvWx0123", "AbCdEfGhIjKlMnOp", "credential"),
        ("lin_api_AbCdEfGhIjKlMnOpQrStUvWx0123", "AbCdEfGhIjKlMnOp", "credential"),
        ("npm_AbCdEfGhIjKlMnOpQrStUvWx0123456789", "AbCdEfGhIjKlMnOp", "credential"),
        ("aws secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "credential"),
        ("card=4111111111111111", "4111111111111111", "card"),
        ("5500 0000 0000 0004/12/27", "5500 0000 0000 0004", "card"),
        ("5500-0000-0000-0004-123", "5500-0000-0000-0004", "card"),
        ("5500/0000/0000/0004", "5500/0000", "card"),
        ("5500_0000_0000_0004", "5500_0000", "card"),
        ("5500,0000,0000,0004", "5500,0000", "card"),
        ("5500–0000–0000–0004", "0000–0000", "card"),
        ("4111  1111  1111  1111", "1111  1111", "card"),
        ("card ٤١١١١١١١١١١١١١١١", "١١١١", "card"),
        ("my SSN is 219 09 9999", "219 09 9999", "government_id"),
        ("my SSN is 219.09.9999", "219.09.9999", "government_id"),
        ("219–09–9999", "219–09", "government_id"),
        ("social 219099999", "219099999", "government_id"),
        # the attack on the result
        ("Moje heslo je Leto2024!", "Leto2024!", "credential"),
        ("Salasanani on Kesa2024!", "Kesa2024!", "credential"),
        ("Mitt passord er Sommer2024!", "Sommer2024!", "credential"),
        ("A jelszavam Nyar2024!", "Nyar2024!", "credential"),
        ("Parola mea este Vara2024!", "Vara2024!", "credential"),
        ("Ο κωδικός μου είναι Kalokairi2024!", "Kalokairi2024!", "credential"),
        ("كلمة المرور الخاصة بي هي Sayf2024!", "Sayf2024!", "credential"),
        ("मेरा पासवर्ड Garmi2024! है", "Garmi2024!", "credential"),
        ("Mật khẩu của tôi là Mua2024he!", "Mua2024he!", "credential"),
        ("Kata sandi saya Musim2024!", "Musim2024!", "credential"),
        ("הסיסמה שלי היא Kayitz2024!", "Kayitz2024!", "credential"),
        ("รหัสผ่านของฉันคือ Rodon2024!", "Rodon2024!", "credential"),
        ("login: bob / pass: Hunter22x!", "Hunter22x!", "credential"),
        ("my password is Hunter22x!", "Hunter22x!", "credential"),  # its last sign is masked with it
        ("sk-or-v1-" + "a1b2c3d4" * 8, "a1b2c3d4a1b2c3d4", "credential"),
        ("key-" + "0123456789abcdef" * 2, "0123456789abcdef", "credential"),
        ("pypi-AgEIcHlwaS5vcmc" + "A1b2C3d4" * 8, "A1b2C3d4A1b2C3d4", "credential"),
        ("dckr_pat_AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOp", "credential"),
        ("dapi" + "0123456789abcdef" * 2, "0123456789abcdef", "credential"),
        ("ATATT3xFfGF0AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOp", "credential"),
        ("sq0atp-AbCdEfGhIjKlMnOpQrStUv", "AbCdEfGhIjKlMnOp", "credential"),
        ("bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw7", "AAHdqTcvCH1vGWJx", "credential"),
        ("sbp_" + "0123456789abcdef" * 2 + "01234567", "0123456789abcdef", "credential"),
        ("fw_AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOp", "credential"),
        ("AccountKey=" + "Ab1+Cd2/" * 8 + "==", "Ab1+Cd2/Ab1+Cd2/", "credential"),
        ("akiaz7qplmxv4rty2kwb", "z7qplmxv4rty", "credential"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            "SflKxwRJSMeKKF2QT4fw",
            "credential",
        ),
        ("4111 1111\n1111 1111", "1111\n1111", "card"),
        ("4111-1111-\n1111-1111", "4111-1111-", "card"),
        ("4111\t1111\t1111\t1111", "1111\t1111", "card"),
        ("4111 - 1111 - 1111 - 1111", "1111 - 1111", "card"),
        ("4111·1111·1111·1111", "1111·1111", "card"),
        ("ref x4111111111111111x", "4111111111111111", "card"),
        ("id_4111111111111111", "4111111111111111", "card"),
        ("card no.4111111111111111.", "4111111111111111", "card"),
        ("my SSN is 078/05/1120", "078/05/1120", "government_id"),
        ("SSN078051120", "078051120", "government_id"),
        ("IBAN DE89.3704.0044.0532.0130.00", "3704.0044.0532", "bank_account"),
        ("IBAN DE89_3704_0044_0532_0130_00", "3704_0044_0532", "bank_account"),
    ],
)
def test_the_secrets_an_attack_found_are_masked_whole(text, needle, kind):
    findings = find(text)
    assert [f.kind for f in findings] == [Sensitive(kind)]
    masked = mask(text, EVERYTHING)
    assert needle not in masked and masked.count("[") == 1
    # nothing of the value is left beside its mask: the text around it is what remains
    (f,) = findings
    assert masked == text[: f.start] + masked[f.start : masked.index("]", f.start) + 1] + text[f.end :]


@pytest.mark.parametrize(
    "text",
    [
        "MAX_TOKENS=4096 is fine",  # names a token; its value is a number
        "TOKEN_KIND: bearer",
        "PASSWORD_MIN_LENGTH = <number>",
        "var access_token = 'YOUR_ACCESS_TOKEN';",
        "tokenizer=BertTokenizer.from_pretrained('bert-base-cased')",
        "new_password = prompt('Please enter your new password')",
        "ansible_ssh_private_key_file=/path/to/ssh/key",
        "Shiretoko pass: this mountain pass offers views",
        "COMPASS: Contrastive Multimodal Pretraining",
        "Username: admin, Password: password (or leave it blank)",
        "MYSQL_ROOT_PASSWORD=secret",
        "first_pass: done",
        "pass_threshold: 0.75",
        "PASS_RATE=0.95",
        "second_pass: enabled",
        "La clave del éxito es 100% esfuerzo",
        "pwd: /home/alice/src",
        "5411 MARKET 51.2494 22.5758 5411 CIRCLE K 50.2762 19.0196 5411",  # coordinates, not a card
        "the token is true",
        "SECRET=changeme",
        "ssn 123",
        "I played 4242.42 minutes",
        "I need a password reset today",
        "my password is too short",
        "the password was changed yesterday",
        "wifi password changed",
        "The key takeaway from 2024 is growth",
        "primary key constraint on id",
        "order 2024/12/31 4111 1111",
        "SKU 5500-0000-0000-0001-77",  # no card inside: its checksum fails at every cut
        "social media 2019 stats",
        'Ottimo, la parola è "domenica".',  # "parola": a word, in Italian
        "see www.facebook.com/business/help/225644141140164",
        "meanExp (145865, float64, 0.356445562281524)",
    ],
)
def test_assignments_and_numbers_that_hold_no_secret(text):
    assert find(text) == []


def test_an_echo_is_masked_where_it_stands_alone_and_read_as_the_gate_reads():
    """A value found in one message is masked in the others where it stands as a word, also
    written with an invisible character, full-width digits or in another case; a short one, or one inside a
    longer word or number, masks nothing else."""
    said = [
        Message("user", "my password is Tr0ub4dor&3Zq, and a pin 1234! and first_pass: d0ne1"),
        Message(
            "assistant",
            "Keeping Tr0ub\u200b4dor&3Zq safe (and ＴＲ０ub4dor&3Zq?) - Order 12345, abandoned, d0ne12",
        ),
    ]
    out, _, found = screen_messages(said, GatePolicy())
    assert out[1].content == "Keeping [credential] safe (and [credential]?) - Order 12345, abandoned, d0ne12"
    assert "Tr0ub4dor&3Zq" in found and all(len(v) >= ECHO_MIN for v in found)
    earlier = [
        Message("user", "set it to Tr0ub4dor&3Zq.", id="m1"),
        Message("user", "xTr0ub4dor&3Zqx", id="m2"),
    ]
    assert echoed(earlier, found) == [("m1", "set it to [credential].")]


def test_an_echo_in_another_case_or_of_a_short_password_is_masked():
    said = [
        Message("user", "My password is Tr0ub4dor&3x and the door code password: abc12"),
        Message("assistant", "Saved: TR0UB4DOR&3X. I'll remember abc12 too (not abc123)."),
    ]
    out, _, _ = screen_messages(said, GatePolicy())
    assert out[1].content == "Saved: [credential]. I'll remember [credential] too (not abc123)."
