from lib.textutil import shorten


def test_shorten():
    # TODO: more cases
    assert shorten("abcdef", 3) == "abc"  # TODO: unicode
