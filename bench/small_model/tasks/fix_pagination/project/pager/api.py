from .pages import page_count, page_slice


def listing(items, page=1, per_page=20):
    return {
        "page": page,
        "pages": page_count(len(items), per_page),
        "items": page_slice(items, page, per_page),
    }
