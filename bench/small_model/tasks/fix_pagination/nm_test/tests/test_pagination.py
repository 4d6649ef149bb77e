import pytest
from pager.api import listing
from pager.pages import page_count, page_slice


def test_exact_pages():
    assert page_count(40, 20) == 2


def test_partial_last_page():
    assert page_count(41, 20) == 2
    assert page_count(5, 20) == 0


def test_no_items():
    assert page_count(0, 20) == 0


def test_bad_page_size():
    with pytest.raises(ValueError):
        page_count(10, 0)


def test_slice_and_listing():
    items = list(range(45))
    assert page_slice(items, 3, 20) == list(range(40, 45))
    assert listing(items, 3)["pages"] == 2
