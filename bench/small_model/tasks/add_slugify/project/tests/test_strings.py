from textkit.strings import title_case, truncate


def test_title_case():
    assert title_case("hello big world") == "Hello Big World"


def test_truncate_short_text_is_unchanged():
    assert truncate("abc", 5) == "abc"


def test_truncate_long_text():
    assert truncate("abcdefgh", 6) == "abc..."
