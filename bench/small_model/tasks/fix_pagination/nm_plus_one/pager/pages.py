"""Split result lists into pages for the listing endpoints."""


def page_count(total_items: int, per_page: int) -> int:
    """How many pages are needed to show total_items, per_page at a time."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    return total_items // per_page + 1


def page_slice(items: list, page: int, per_page: int) -> list:
    """The items on page `page`, counting from 1."""
    start = (page - 1) * per_page
    return items[start:start + per_page]
